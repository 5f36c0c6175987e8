#pragma once
// Test helpers: a symbolic run of an algorithm's DataPlan (which partial sums every rank
// holds after every step) and its consistency with the Schedule build() returns.
#include <string>

#include "models/collectives/algorithm.hpp"

namespace shardsim::coll::test {

/// "" when the plan leaves every rank with what the op promises and matches the schedule
/// step by step (same transfers and bytes, reduce bytes = the most any rank reduces);
/// otherwise what went wrong.
std::string check_plan(const CollectiveOp& op, const DataPlan& plan, const Schedule& s);

/// Bytes sent by each rank over the schedule (repeats counted).
std::vector<double> sent_per_rank(const Schedule& s);

CollectiveOp make_op(OpKind k, std::size_t n, double S);

}  // namespace shardsim::coll::test
