// FlowNetwork's clients (see flow_network.hpp): adding and removing them, and handing each
// completion batch to the clients whose flows finished. The solver and the event loop are in
// flow_network.cpp.
#include <stdexcept>

#include <fmt/format.h>

#include "sim/flow_network.hpp"

namespace shardsim::sim {

void FlowNetwork::set_completion_handler(CompletionHandler h) {
  auto& slot = clients_[kDefaultClient].handler;
  if (!h) {
    slot = nullptr;
    return;
  }
  slot = [h = std::move(h)](std::span<const std::uint64_t> tags) {
    for (auto t : tags) h(t);
  };
}

FlowNetwork::ClientId FlowNetwork::add_client(BatchCompletionHandler h) {
  ClientId c;
  if (!free_clients_.empty()) {
    c = free_clients_.back();
    free_clients_.pop_back();
  } else {
    if (clients_.size() > (std::uint64_t{1} << (64 - kTagBits)) - 1) {
      throw std::length_error("flow network: too many clients");
    }
    c = static_cast<ClientId>(clients_.size());
    clients_.emplace_back();
  }
  Client& cl = clients_[c];
  cl.handler = std::move(h);
  cl.flows = 0;
  cl.state = Client::State::live;
  return c;
}

FlowNetwork::Client& FlowNetwork::live_client(ClientId c) {
  if (c >= clients_.size() || clients_[c].state != Client::State::live) {
    throw std::out_of_range(fmt::format("flow network: client {} is not registered", c));
  }
  return clients_[c];
}

void FlowNetwork::remove_client(ClientId c) {
  if (c == kDefaultClient) throw std::out_of_range("flow network: the default client cannot be removed");
  live_client(c);
  if (dispatching_ > 0) {
    // Its handler may be running: released after the dispatch. Completions of the same batch
    // that come after this call are dropped (see dispatch()).
    clients_[c].state = Client::State::zombie;
    ++zombies_;
    removals_.push_back(c);
    return;
  }
  clients_[c].state = Client::State::zombie;
  ++zombies_;
  release_client(c);
}

// A zombie (removed) client: handler dropped now; id reused once no flow of it is in flight.
void FlowNetwork::release_client(ClientId c) {
  Client& cl = clients_[c];
  cl.handler = nullptr;
  if (cl.flows == 0 && cl.state == Client::State::zombie) {
    cl.state = Client::State::free;
    --zombies_;
    free_clients_.push_back(c);
  }
}

void FlowNetwork::call(Client& cl, std::span<const std::uint64_t> tags) {
  cl.flows -= tags.size();
  if (cl.state == Client::State::live && cl.handler) {
    ++dispatching_;
    cl.handler(tags);
    --dispatching_;
  }
}

void FlowNetwork::dispatch(std::vector<std::uint64_t>& tags, bool one) {
  if (tags.empty()) return;
  // The common case (one collective in flight, or one finishing): the batch as it is.
  const ClientId first = client_of(tags.front());
  if (one) {
    if (first != kDefaultClient) {
      for (std::uint64_t& t : tags) t &= kMaxTag;
    }
    call(clients_[first], tags);
  } else {
    touched_.clear();
    for (std::uint64_t t : tags) {
      const ClientId c = client_of(t);
      auto& batch = clients_[c].batch;
      if (batch.empty()) touched_.push_back(c);
      batch.push_back(tag_of(t));
    }
    // A handler may add clients (the deque keeps references) but cannot start a dispatch:
    // dispatches run from this network's own events only.
    for (ClientId c : touched_) {
      Client& cl = clients_[c];
      std::vector<std::uint64_t> batch = std::move(cl.batch);
      call(cl, batch);
      batch.clear();
      clients_[c].batch = std::move(batch);
    }
  }
  if (dispatching_ == 0) {
    for (ClientId c : removals_) release_client(c);
    removals_.clear();
  }
  // Removed clients whose last flows just completed free their ids.
  if (zombies_ > 0) {
    if (one) {
      if (clients_[first].state == Client::State::zombie) release_client(first);
    } else {
      for (ClientId c : touched_) {
        if (clients_[c].state == Client::State::zombie) release_client(c);
      }
    }
  }
}

}  // namespace shardsim::sim
