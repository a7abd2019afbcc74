//===- TimingPlan.cpp - event simulation of a timed plan -----------*- C++ -*-===//
//
// See TimingPlan.h and docs/TimingModel.md.
//
//===----------------------------------------------------------------------===//

#include "ptrain/Analysis/TimingPlan.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>

using namespace mlir::ptrain;

int Plan::add(PlanStep step) {
  int id = steps.size();
  int maxRank = numRanks - 1;
  for (int r : step.ranks)
    maxRank = std::max(maxRank, r);
  if (maxRank >= numRanks) {
    numRanks = maxRank + 1;
    computeOrder.resize(numRanks);
    commOrder.resize(numRanks);
    peakMemory.resize(numRanks, 0);
  }
  if (step.kind == PlanStep::Compute)
    computeOrder[step.ranks.front()].push_back(id);
  else if (step.kind == PlanStep::Collective)
    for (int r : step.ranks)
      commOrder[r].push_back(id);
  steps.push_back(std::move(step));
  return id;
}

namespace {
/// The state of one simulation.
struct Simulator {
  const Plan &plan;
  Timeline &out;
  size_t n;
  std::vector<int> depsLeft;
  std::vector<double> depsEnd;
  std::vector<std::vector<int>> dependents;
  std::vector<size_t> computePos, commPos;
  std::vector<double> computeFree, commFree;
  /// Per link direction (src * ranks + dst): when it is free and its last transfer.
  std::vector<double> linkFree;
  std::vector<int> linkLast;
  /// A transfer in flight between two ranks, as a fluid flow (crossing sends and the rendezvous stall).
  struct Flow {
    int id;
    /// Seconds of the link at full rate: the whole transfer, its eager part (min(eagerSeconds, duration); the
    /// whole when it has none) and the part moved so far.
    double work, eager, moved = 0;
    /// When the rest past the eager part may move (the end of the sender's compute step running at the
    /// transfer's start; -inf when the sender was idle or there is no eager limit) and that step.
    double resume;
    int resumeStep;
    /// 1 / the transfer's rate while the opposite direction moves (PlanStep::crossingSlowdown).
    double slowdown;
    bool forward; // src < dst
    /// Seconds spent paused at the end of the eager part (the stall); the end, once the flow finished.
    double stall = 0, end = -1;
  };
  /// Per unordered rank pair (min * ranks + max): the transfers in flight between the two ranks, in both
  /// directions, and the time their state is advanced to.
  struct Pair {
    double now = 0;
    std::vector<Flow> flows;
  };
  std::vector<Pair> pairs;
  std::vector<bool> done, queued;
  /// Realized predecessors (dependencies, stream and link predecessors) for the slack pass.
  std::vector<std::vector<int>> preds;
  std::vector<int> lastOnCompute, lastOnComm;
  std::vector<int> order; // scheduling order
  /// Per stalled transfer: the sender's compute step its rest waited for (-1: none) and that step's end, when
  /// the rest resumed (-1: none).
  std::vector<int> stallPred;
  std::vector<double> resumeAt;
  /// (earliest start, 0 for compute steps and 1 for the others, step): at equal times compute steps go first,
  /// so that a transfer sees the sender's step that starts with it (the rendezvous stall). Compute steps share
  /// no resource with transfers and collectives, so this changes no start time.
  using Entry = std::tuple<double, int, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;

  Simulator(const Plan &plan, Timeline &out) : plan(plan), out(out), n(plan.steps.size()) {}

  /// The link resources of a transfer: its direction src -> dst, or the plan's shared resources (numbered
  /// after the ranks x ranks directions).
  llvm::SmallVector<size_t, 2> links(const PlanStep &s) const {
    size_t directions = static_cast<size_t>(plan.numRanks) * plan.numRanks;
    if (s.links.empty())
      return {static_cast<size_t>(s.ranks[0]) * plan.numRanks + s.ranks[1]};
    llvm::SmallVector<size_t, 2> out;
    for (int l : s.links)
      out.push_back(directions + l);
    return out;
  }

  bool isHead(int id) const {
    const PlanStep &s = plan.steps[id];
    if (s.kind == PlanStep::Compute) {
      int r = s.ranks.front();
      return computePos[r] < plan.computeOrder[r].size() && plan.computeOrder[r][computePos[r]] == id;
    }
    if (s.kind == PlanStep::Collective)
      return llvm::all_of(
          s.ranks, [&](int r) { return commPos[r] < plan.commOrder[r].size() && plan.commOrder[r][commPos[r]] == id; });
    return true;
  }

  double earliestStart(int id) const {
    const PlanStep &s = plan.steps[id];
    double t = depsEnd[id];
    if (s.kind == PlanStep::Compute)
      t = std::max(t, computeFree[s.ranks.front()]);
    else if (s.kind == PlanStep::Collective)
      for (int r : s.ranks)
        t = std::max(t, commFree[r]);
    else
      for (size_t l : links(s))
        t = std::max(t, linkFree[l]);
    return t;
  }

  int kindOrder(int id) const { return plan.steps[id].kind == PlanStep::Compute ? 0 : 1; }

  void tryQueue(int id) {
    if (done[id] || queued[id] || depsLeft[id] > 0 || !isHead(id))
      return;
    queued[id] = true;
    queue.push({earliestStart(id), kindOrder(id), id});
  }

  /// Moves the flows of `pair` forward to `limit` (or until all have ended when limit is +inf), by processor
  /// sharing of the link between its two directions (TimingPlan.h, "crossing sends"): a flow moves at rate 1,
  /// or 1 / its slowdown while a flow of the opposite direction moves; a flow whose eager part is done before
  /// its `resume` pauses until then (it moves no data, so it slows nothing). Rates change only at a flow's
  /// finish, pause or resume, so the loop steps from one such event to the next. Flows that end are removed
  /// (their `end` set) and returned in `finished`.
  static void advance(Pair &pair, double limit, std::vector<Flow> &finished) {
    double &now = pair.now;
    while (!pair.flows.empty() && now < limit) {
      auto paused = [&](const Flow &f) { return f.moved >= f.eager && f.moved < f.work && now < f.resume; };
      bool movingForward = false, movingBackward = false;
      for (const Flow &f : pair.flows)
        if (!paused(f))
          (f.forward ? movingForward : movingBackward) = true;
      // Each flow's rate and the time to its next event.
      llvm::SmallVector<double, 4> rate, next;
      double dt = limit - now;
      for (const Flow &f : pair.flows) {
        double r = (f.forward ? movingBackward : movingForward) ? 1 / f.slowdown : 1;
        double e;
        if (paused(f)) {
          r = 0;
          e = f.resume - now;
        } else if (f.moved < f.eager && f.eager < f.work && f.resume > now) {
          e = (f.eager - f.moved) / r; // reaches the eager part's end (it may pause there)
        } else {
          e = (f.work - f.moved) / r;
        }
        rate.push_back(r);
        next.push_back(e);
        dt = std::min(dt, e);
      }
      // Advance; a flow whose event is at the step's end snaps to it exactly (no drift from the division).
      for (size_t i = 0; i < pair.flows.size(); ++i) {
        Flow &f = pair.flows[i];
        if (rate[i] == 0) {
          f.stall += dt;
          continue;
        }
        bool atEvent = next[i] <= dt;
        if (atEvent && f.moved < f.eager && f.eager < f.work && f.resume > now)
          f.moved = f.eager;
        else if (atEvent)
          f.moved = f.work;
        else
          f.moved = std::min(f.moved + rate[i] * dt, f.work);
      }
      now = dt >= limit - now ? limit : now + dt;
      for (size_t i = 0; i < pair.flows.size();) {
        if (pair.flows[i].moved >= pair.flows[i].work) {
          pair.flows[i].end = now;
          finished.push_back(pair.flows[i]);
          pair.flows.erase(pair.flows.begin() + i);
        } else {
          ++i;
        }
      }
    }
    if (now < limit)
      now = limit; // no flow left: the pair idles until `limit`
  }

  /// Re-predicts the end of every flow of `pair` (no later transfer assumed) and writes it into the timeline:
  /// the end, stall and crossing seconds of each, the link it frees and the dependency time of its dependents.
  /// A transfer's end only grows from one prediction to the next (a new opposite flow only lowers rates), and
  /// its dependents' queue entries carry an earliest start at or after the old end, later than every event
  /// processed so far, so none of them has started: they are re-queued by the start check of run().
  void predict(Pair &pair) {
    Pair copy = pair;
    std::vector<Flow> finished;
    advance(copy, std::numeric_limits<double>::infinity(), finished);
    for (Flow f : finished) {
      int id = f.id;
      const PlanStep &s = plan.steps[id];
      // A flow that no crossing slows (slowdown 1) moves at rate 1 throughout: its end in closed form, bit for bit
      // the end of the simulator before crossing sends (the fluid's sums of partial moves round differently).
      if (f.slowdown <= 1) {
        double eagerEnd = out.start[id] + f.eager;
        bool stalled = f.resume > eagerEnd;
        f.end = stalled ? f.resume + (f.work - f.eager) : out.start[id] + f.work;
        f.stall = stalled ? f.resume - eagerEnd : 0;
      }
      out.end[id] = f.end;
      out.stall[id] = f.stall;
      out.crossing[id] = std::max(0.0, f.end - out.start[id] - s.duration - f.stall);
      stallPred[id] = f.stall > 0 ? f.resumeStep : -1;
      resumeAt[id] = f.stall > 0 ? f.resume : -1;
      for (size_t l : links(s))
        if (linkLast[l] == id)
          linkFree[l] = f.end;
      if (done[id])
        for (int d : dependents[id])
          depsEnd[d] = std::max(depsEnd[d], f.end);
    }
  }

  /// Starts transfer `id` at `start`: a flow of its pair, and every flow of the pair re-predicted.
  void startTransfer(int id, double start) {
    const PlanStep &s = plan.steps[id];
    int a = s.ranks[0], b = s.ranks[1];
    Pair &pair = pairs[static_cast<size_t>(std::min(a, b)) * plan.numRanks + std::max(a, b)];
    std::vector<Flow> finished;
    advance(pair, start, finished);
    Flow f;
    f.id = id;
    f.work = s.duration;
    f.eager = s.eagerSeconds >= 0 ? std::min(s.eagerSeconds, s.duration) : s.duration;
    // The rendezvous stall: the sender is computing (a step started at or before `start` ends after it), so
    // the rest past the eager part moves from that step's end.
    f.resume = -std::numeric_limits<double>::infinity();
    f.resumeStep = -1;
    if (s.eagerSeconds >= 0 && computeFree[a] > start) {
      f.resume = computeFree[a];
      f.resumeStep = lastOnCompute[a];
    }
    f.slowdown = std::max(1.0, s.crossingSlowdown);
    f.forward = a < b;
    pair.flows.push_back(f);
    predict(pair);
  }

  void schedule(int id, double start) {
    const PlanStep &s = plan.steps[id];
    out.start[id] = start;
    out.end[id] = start + s.duration;
    if (s.kind == PlanStep::Transfer)
      startTransfer(id, start);
    done[id] = true;
    order.push_back(id);
    for (int d : s.deps)
      preds[id].push_back(d);
    if (s.kind == PlanStep::Compute) {
      int r = s.ranks.front();
      if (lastOnCompute[r] >= 0)
        preds[id].push_back(lastOnCompute[r]);
      lastOnCompute[r] = id;
      computeFree[r] = out.end[id];
      ++computePos[r];
      if (computePos[r] < plan.computeOrder[r].size())
        tryQueue(plan.computeOrder[r][computePos[r]]);
    } else if (s.kind == PlanStep::Collective) {
      for (int r : s.ranks) {
        if (lastOnComm[r] >= 0)
          preds[id].push_back(lastOnComm[r]);
        lastOnComm[r] = id;
        commFree[r] = out.end[id];
        ++commPos[r];
      }
      for (int r : s.ranks)
        if (commPos[r] < plan.commOrder[r].size())
          tryQueue(plan.commOrder[r][commPos[r]]);
    } else {
      for (size_t l : links(s)) {
        if (linkLast[l] >= 0)
          preds[id].push_back(linkLast[l]);
        linkLast[l] = id;
        linkFree[l] = out.end[id];
      }
    }
    for (int d : dependents[id]) {
      depsEnd[d] = std::max(depsEnd[d], out.end[id]);
      --depsLeft[d];
      tryQueue(d);
    }
  }

  bool run(std::string &error) {
    int ranks = plan.numRanks;
    depsLeft.assign(n, 0);
    depsEnd.assign(n, 0);
    dependents.assign(n, {});
    computePos.assign(ranks, 0);
    commPos.assign(ranks, 0);
    computeFree.assign(ranks, 0);
    commFree.assign(ranks, 0);
    lastOnCompute.assign(ranks, -1);
    lastOnComm.assign(ranks, -1);
    size_t numLinks = static_cast<size_t>(ranks) * ranks;
    for (const PlanStep &s : plan.steps)
      for (int l : s.links)
        numLinks = std::max(numLinks, static_cast<size_t>(ranks) * ranks + l + 1);
    linkFree.assign(numLinks, 0);
    linkLast.assign(numLinks, -1);
    pairs.assign(static_cast<size_t>(ranks) * ranks, Pair());
    done.assign(n, false);
    queued.assign(n, false);
    preds.assign(n, {});
    stallPred.assign(n, -1);
    resumeAt.assign(n, -1);
    out = Timeline();
    out.start.assign(n, 0);
    out.end.assign(n, 0);
    out.stall.assign(n, 0);
    out.crossing.assign(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (int d : plan.steps[i].deps) {
        ++depsLeft[i];
        dependents[d].push_back(i);
      }
    for (size_t i = 0; i < n; ++i)
      tryQueue(i);
    while (!queue.empty()) {
      auto [key, kind, id] = queue.top();
      queue.pop();
      ++out.events;
      double start = earliestStart(id);
      if (start > key) { // a resource became busy since it was queued
        queue.push({start, kind, id});
        continue;
      }
      schedule(id, start);
    }
    if (order.size() != n) {
      for (size_t i = 0; i < n; ++i)
        if (!done[i]) {
          error = "the plan deadlocks: step '" + plan.steps[i].name + "' never starts (compute streams stuck at:";
          break;
        }
      for (int r = 0; r < plan.numRanks; ++r)
        if (computePos[r] < plan.computeOrder[r].size())
          error += " rank " + std::to_string(r) + " at " + plan.steps[plan.computeOrder[r][computePos[r]]].name + ",";
      error.back() = ')';
      return false;
    }
    return true;
  }
};
} // namespace

bool mlir::ptrain::simulate(const Plan &plan, Timeline &out, std::string &error) {
  Simulator sim(plan, out);
  if (!sim.run(error))
    return false;
  size_t n = plan.steps.size();
  double t = 0;
  for (size_t i = 0; i < n; ++i)
    t = std::max(t, out.end[i]);
  out.iterationTime = t;

  // Slack: latest end without delaying the iteration, backwards over the realized predecessor graph. A
  // stalled transfer spans its stall too, and the sender's step it waited for must end before its rest.
  std::vector<double> lateEnd(n, t);
  // A stalled transfer's seconds from its resume (the sender's step end) to its end.
  auto rest = [&](int id) { return out.end[id] - sim.resumeAt[id]; };
  for (auto it = sim.order.rbegin(); it != sim.order.rend(); ++it) {
    int id = *it;
    double lateStart = lateEnd[id] - (plan.steps[id].duration + out.stall[id] + out.crossing[id]);
    for (int p : sim.preds[id])
      lateEnd[p] = std::min(lateEnd[p], lateStart);
    if (int c = sim.stallPred[id]; c >= 0)
      lateEnd[c] = std::min(lateEnd[c], lateEnd[id] - rest(id));
  }
  double eps = 1e-9 * std::max(t, 1e-12);
  out.slack.resize(n);
  out.critical.resize(n);
  for (size_t i = 0; i < n; ++i) {
    out.slack[i] = std::max(0.0, lateEnd[i] - out.end[i]);
    out.critical[i] = out.slack[i] <= eps;
  }
  // One critical path: from the step ending last (the latest-starting one of those, so that zero-length
  // steps at the end are included), back through critical predecessors ending at its start.
  int cur = -1;
  for (size_t i = 0; i < n; ++i)
    if (out.end[i] >= t - eps && (cur < 0 || out.start[i] >= out.start[cur]))
      cur = i;
  while (cur >= 0) {
    out.criticalPath.push_back(cur);
    int next = -1;
    // A stalled transfer's critical predecessor is the sender's step its rest waited for.
    if (int c = sim.stallPred[cur];
        c >= 0 && out.critical[c] && std::abs(out.end[c] - (out.end[cur] - rest(cur))) <= eps) {
      cur = c;
      continue;
    }
    for (int p : sim.preds[cur])
      if (out.critical[p] && std::abs(out.end[p] - out.start[cur]) <= eps && (next < 0 || p < next))
        next = p;
    cur = next;
  }
  std::reverse(out.criticalPath.begin(), out.criticalPath.end());

  // Bubble and the per-rank time split.
  int ranks = plan.numRanks;
  std::vector<double> busy(ranks, 0);
  double pipelineEnd = 0;
  for (size_t i = 0; i < n; ++i) {
    const PlanStep &s = plan.steps[i];
    if (s.kind == PlanStep::Compute &&
        (s.category == PlanStep::Forward || s.category == PlanStep::Backward ||
         s.category == PlanStep::ForwardBackward || s.category == PlanStep::Encode || s.category == PlanStep::Decode)) {
      busy[s.ranks.front()] += s.duration;
      pipelineEnd = std::max(pipelineEnd, out.end[i]);
    }
  }
  double maxBusy = ranks ? *std::max_element(busy.begin(), busy.end()) : 0;
  out.bubble = maxBusy > 0 ? (pipelineEnd - maxBusy) / maxBusy : 0;
  out.computeTime.assign(ranks, 0);
  out.exposedCommTime.assign(ranks, 0);
  out.idleTime.assign(ranks, 0);
  for (int r = 0; r < ranks; ++r) {
    double prevEnd = 0;
    for (int id : plan.computeOrder[r]) {
      double gap = out.start[id] - prevEnd;
      double exposed = 0;
      for (int d : plan.steps[id].deps)
        if (plan.steps[d].kind != PlanStep::Compute) {
          double overlap = std::min(out.start[id], out.end[d]) - std::max(prevEnd, out.start[d]);
          exposed = std::max(exposed, overlap);
        }
      exposed = std::min(std::max(exposed, 0.0), gap);
      out.exposedCommTime[r] += exposed;
      out.idleTime[r] += gap - exposed;
      out.computeTime[r] += plan.steps[id].duration;
      prevEnd = out.end[id];
    }
    // After the last compute step: the rank's collectives still running (the loss all-reduce) are exposed.
    double tail = t - prevEnd, tailExposed = 0;
    for (int id : plan.commOrder[r])
      tailExposed += std::max(0.0, std::min(t, out.end[id]) - std::max(prevEnd, out.start[id]));
    tailExposed = std::min(tailExposed, tail);
    out.exposedCommTime[r] += tailExposed;
    out.idleTime[r] += tail - tailExposed;
  }
  return true;
}

void mlir::ptrain::printTimeline(const Plan &plan, const Timeline &timeline, llvm::raw_ostream &os) {
  os << "iteration " << llvm::format("%.3f", timeline.iterationTime * 1e6) << " us, bubble "
     << llvm::format("%.4f", timeline.bubble) << "\n";
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &s = plan.steps[i];
    os << (timeline.critical[i] ? "* " : "  ") << s.name << " ranks";
    for (int r : s.ranks)
      os << " " << r;
    os << " start " << llvm::format("%.3f", timeline.start[i] * 1e6) << " end "
       << llvm::format("%.3f", timeline.end[i] * 1e6) << " slack " << llvm::format("%.3f", timeline.slack[i] * 1e6)
       << " duration " << llvm::format("%.3f", s.duration * 1e6);
    if (i < timeline.stall.size() && timeline.stall[i] > 0)
      os << " stall " << llvm::format("%.3f", timeline.stall[i] * 1e6);
    if (i < timeline.crossing.size() && timeline.crossing[i] > 0)
      os << " crossing " << llvm::format("%.3f", timeline.crossing[i] * 1e6);
    os << "\n";
  }
}
