// The how-much phase (DUCC's three-level fair share, on the dominant resource).
//
// Pools are visited subpools first. A pool's own nodes plus what its subpools
// left over form the room of the work bound to the pool (its classes' jobs):
// residents of a subpool are served before squatters from above. Inside a
// pool, classes are taken in priority tiers, best first; each tier gets what it
// can use of what the tiers before it left:
//   1. non-preemptible requests (fixed_share, reserve), one allocation per
//      request (all pending tasks or none), in submit order, each within the
//      pool's own nodes, the pool's resource_limits and the user's allotments;
//   2. fair_share classes: weighted fair share over classes, then equal shares
//      over the users of a class, then over the jobs of a user, on the dominant
//      resource, capped by demand (water-filling: what a capped entity leaves
//      goes to the others). With several resources this is DRF's progressive
//      filling: a common level rises until some resource runs out; the jobs that
//      use it stop there and the level keeps rising for the others.
//
// Shares are int64 fixed point (kShareOne = the pool's subtree); rooms are
// exact integer resource vectors. The level at which a resource runs out is
// searched on a continuous model in double (evaluated in a fixed order, so
// deterministic); the shares at that level are then computed exactly, rounded
// down at every level (equal entities get exactly equal shares), and checked
// against the room exactly: the sum over jobs of share * per_task / task_share
// is taken as integer parts plus fractions, and may not exceed the room by
// more than a millionth of a unit.

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/policy/engine.hpp"
#include "core/policy/util.hpp"

namespace claimsched::core::policy {

namespace {

using Vec = std::array<double, kMaxDimensions>;
constexpr double kInf = std::numeric_limits<double>::infinity();
/// "No limit" in an integer room.
constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;

/// floor(a * r / d) and the fraction left, exactly (a, r >= 0, d > 0), given
/// dir = r / d and inv = 1 / d: the double estimate is corrected in integers.
inline int64_t floor_mul_div(int64_t a, int64_t r, int64_t d, double dir, double inv, double& frac) {
  i128 num = static_cast<i128>(a) * r;
  int64_t q = static_cast<int64_t>(static_cast<double>(a) * dir);
  while (static_cast<i128>(q) * d > num) --q;
  while (static_cast<i128>(q + 1) * d <= num) ++q;
  frac = static_cast<double>(static_cast<int64_t>(num - static_cast<i128>(q) * d)) * inv;
  return q;
}

/// Progressive filling over one tier of fair_share classes of one pool.
class TierSolver {
 public:
  /// Reads the model's packed arrays (the jobs themselves are big and the
  /// solver visits them in class order, not id order); writes Model::fair.
  TierSolver(Model& m, const std::vector<uint32_t>& classes) : m_(m), nd_(m.dims.size()) {
    size_t expect = 0;
    for (uint32_t c : classes)
      for (uint32_t g : m.classes[c].groups) expect += m.groups[g].jobs.size();
    jobs_.reserve(expect);
    D_.reserve(expect);
    delta_.reserve(expect);
    inv_delta_.reserve(expect);
    r_.reserve(expect * nd_);
    dir_.reserve(expect * nd_);
    for (uint32_t c : classes) {
      uint32_t first_user = static_cast<uint32_t>(user_job_begin_.size());
      for (uint32_t g : m.classes[c].groups) {
        uint32_t first_job = static_cast<uint32_t>(jobs_.size());
        const auto& group = m.groups[g];
        for (uint32_t pos = group.packed_begin; pos < group.packed_end; ++pos) {
          Share demand = m.packed_demand[pos];
          if (demand <= 0) continue;
          jobs_.push_back(m.packed_job[pos]);
          D_.push_back(demand);
          Share delta = m.packed_delta[pos];
          delta_.push_back(delta);
          inv_delta_.push_back(1.0 / static_cast<double>(delta));
          for (size_t k = 0; k < nd_; ++k) {
            int64_t r = m.packed_r[pos * nd_ + k];
            r_.push_back(r);
            dir_.push_back(static_cast<double>(r) / static_cast<double>(delta));
          }
        }
        if (jobs_.size() == first_job) continue;
        user_job_begin_.push_back(first_job);
        user_job_end_.push_back(static_cast<uint32_t>(jobs_.size()));
      }
      if (user_job_begin_.size() == first_user) continue;
      class_user_begin_.push_back(first_user);
      class_user_end_.push_back(static_cast<uint32_t>(user_job_begin_.size()));
      weight_.push_back(m.classes[c].spec->weight);
    }
    alloc_.assign(jobs_.size(), 0);
  }

  /// Fills ModelJob::fair of the tier's jobs within `room`; returns what they
  /// take (rounded up to whole units).
  Resources solve(const Resources& room) {
    room_exact_ = room;
    for (size_t k = 0; k < nd_; ++k) room_[k] = static_cast<double>(std::max<int64_t>(0, room[m_.dims[k]]));
    if (jobs_.empty()) return Resources{};
    int64_t lo = 0;
    for (size_t round = 0; round <= nd_ + 1; ++round) {
      prepare();
      int64_t total = total_;
      if (total <= lo || (excess(eval(total)) <= 0 && exact_fits(total))) {
        allocate(total);
        break;
      }
      int64_t s = search(lo, total);
      // The continuous search is a guide; the exact check decides.
      for (int64_t step = 1; s > lo && !exact_fits(s); step *= 2) s = std::max(lo, s - step);
      // The resources (nearly) used up just above s bind; the jobs that use them stop.
      Vec above = eval(std::min(total, s + std::max<int64_t>(1, s >> 20)));
      std::array<bool, kMaxDimensions> binding{};
      bool any = false;
      for (size_t k = 0; k < nd_; ++k) {
        binding[k] = above[k] > room_[k] * (1 - 1e-9);
        any = any || binding[k];
      }
      if (!(allocated_ && allocated_s_ == s)) allocate(s);
      bool changed = false, growing = false;
      for (size_t p = 0; p < jobs_.size(); ++p) {
        if (alloc_[p] >= D_[p]) continue;
        bool stop = !any;
        for (size_t k = 0; k < nd_ && !stop; ++k) stop = binding[k] && dir_[p * nd_ + k] > 0;
        if (stop) {
          D_[p] = alloc_[p];
          changed = true;
        } else {
          growing = true;
        }
      }
      lo = s;
      // Done when nobody can grow any more (no need to sort again).
      if (!changed || !growing) break;
    }
    Resources taken;
    if (!sums_valid_) sum_exact(sum_whole_, sum_frac_);
    for (size_t k = 0; k < nd_; ++k)
      taken.set(m_.dims[k],
                sum_whole_[k] + static_cast<int64_t>(std::ceil(std::max(0.0, sum_frac_[k] - 1e-6))));
    for (size_t p = 0; p < jobs_.size(); ++p) m_.fair[jobs_[p]] = alloc_[p];
    return taken;
  }

 private:
  /// Sorts users' jobs by demand, classes' users by demand, classes by
  /// demand/weight, with prefix sums for the evaluations.
  void prepare() {
    allocated_ = false;
    size_t nu = user_job_begin_.size();
    size_t nc = class_user_begin_.size();
    // Jobs within a user by D (ties: position, i.e. job id).
    perm_.resize(jobs_.size());
    for (size_t u = 0; u < nu; ++u) {
      auto b = perm_.begin() + user_job_begin_[u];
      auto e = perm_.begin() + user_job_end_[u];
      for (uint32_t p = user_job_begin_[u]; p < user_job_end_[u]; ++p) perm_[p] = p;
      std::sort(b, e, [&](uint32_t x, uint32_t y) { return D_[x] != D_[y] ? D_[x] < D_[y] : x < y; });
    }
    PD_.assign(jobs_.size() + nu, 0);
    PF_.assign((jobs_.size() + nu) * nd_, 0.0);
    SD_.assign((jobs_.size() + nu) * nd_, 0.0);
    Du_.assign(nu, 0);
    Fu_.assign(nu * nd_, 0.0);
    for (size_t u = 0; u < nu; ++u) {
      uint32_t b = user_job_begin_[u], e = user_job_end_[u];
      size_t base = b + u;
      for (uint32_t i = b; i < e; ++i) {
        uint32_t p = perm_[i];
        size_t at = base + (i - b);
        PD_[at + 1] = PD_[at] + D_[p];
        for (size_t k = 0; k < nd_; ++k)
          PF_[(at + 1) * nd_ + k] = PF_[at * nd_ + k] + static_cast<double>(D_[p]) * dir_[p * nd_ + k];
      }
      for (uint32_t i = e; i-- > b;) {
        uint32_t p = perm_[i];
        size_t at = base + (i - b);
        for (size_t k = 0; k < nd_; ++k) SD_[at * nd_ + k] = SD_[(at + 1) * nd_ + k] + dir_[p * nd_ + k];
      }
      Du_[u] = PD_[base + (e - b)];
      for (size_t k = 0; k < nd_; ++k) Fu_[u * nd_ + k] = PF_[(base + (e - b)) * nd_ + k];
    }
    // Users within a class by Du.
    uperm_.resize(nu);
    PDU_.assign(nu + nc, 0);
    FU_.assign((nu + nc) * nd_, 0.0);
    Dc_.assign(nc, 0);
    Fc_.assign(nc * nd_, 0.0);
    for (size_t c = 0; c < nc; ++c) {
      uint32_t b = class_user_begin_[c], e = class_user_end_[c];
      for (uint32_t u = b; u < e; ++u) uperm_[u] = u;
      std::sort(uperm_.begin() + b, uperm_.begin() + e,
                [&](uint32_t x, uint32_t y) { return Du_[x] != Du_[y] ? Du_[x] < Du_[y] : x < y; });
      size_t base = b + c;
      for (uint32_t i = b; i < e; ++i) {
        uint32_t u = uperm_[i];
        size_t at = base + (i - b);
        PDU_[at + 1] = PDU_[at] + Du_[u];
        for (size_t k = 0; k < nd_; ++k) FU_[(at + 1) * nd_ + k] = FU_[at * nd_ + k] + Fu_[u * nd_ + k];
      }
      Dc_[c] = PDU_[base + (e - b)];
      for (size_t k = 0; k < nd_; ++k) Fc_[c * nd_ + k] = FU_[(base + (e - b)) * nd_ + k];
    }
    // Classes by Dc / weight.
    cperm_.resize(nc);
    for (uint32_t c = 0; c < nc; ++c) cperm_[c] = c;
    std::sort(cperm_.begin(), cperm_.end(), [&](uint32_t x, uint32_t y) {
      i128 lhs = static_cast<i128>(Dc_[x]) * weight_[y];
      i128 rhs = static_cast<i128>(Dc_[y]) * weight_[x];
      return lhs != rhs ? lhs < rhs : x < y;
    });
    PDC_.assign(nc + 1, 0);
    PW_.assign(nc + 1, 0);
    FC_.assign((nc + 1) * nd_, 0.0);
    for (size_t i = 0; i < nc; ++i) {
      uint32_t c = cperm_[i];
      PDC_[i + 1] = PDC_[i] + Dc_[c];
      PW_[i + 1] = PW_[i] + weight_[c];
      for (size_t k = 0; k < nd_; ++k) FC_[(i + 1) * nd_ + k] = FC_[i * nd_ + k] + Fc_[c * nd_ + k];
    }
    total_ = PDC_[nc];
  }

  // Continuous evaluation: the resources the tier takes at budget s.
  void add_user(uint32_t u, double y, Vec& out) const {
    if (y >= static_cast<double>(Du_[u])) {
      for (size_t k = 0; k < nd_; ++k) out[k] += Fu_[u * nd_ + k];
      return;
    }
    uint32_t b = user_job_begin_[u], g = user_job_end_[u] - b;
    size_t base = b + u;
    // First k whose job is not satisfied at the level y implies.
    uint32_t lo = 0, hi = g - 1;
    while (lo < hi) {
      uint32_t mid = (lo + hi) / 2;
      double f = static_cast<double>(PD_[base + mid]) +
                 static_cast<double>(g - mid) * static_cast<double>(D_[perm_[b + mid]]);
      if (f > y)
        hi = mid;
      else
        lo = mid + 1;
    }
    double x = (y - static_cast<double>(PD_[base + lo])) / static_cast<double>(g - lo);
    for (size_t k = 0; k < nd_; ++k) out[k] += PF_[(base + lo) * nd_ + k] + x * SD_[(base + lo) * nd_ + k];
  }

  void add_class(uint32_t c, double budget, Vec& out) const {
    if (budget >= static_cast<double>(Dc_[c])) {
      for (size_t k = 0; k < nd_; ++k) out[k] += Fc_[c * nd_ + k];
      return;
    }
    uint32_t b = class_user_begin_[c], n = class_user_end_[c] - b;
    size_t base = b + c;
    uint32_t lo = 0, hi = n - 1;
    while (lo < hi) {
      uint32_t mid = (lo + hi) / 2;
      double f = static_cast<double>(PDU_[base + mid]) +
                 static_cast<double>(n - mid) * static_cast<double>(Du_[uperm_[b + mid]]);
      if (f > budget)
        hi = mid;
      else
        lo = mid + 1;
    }
    double y = (budget - static_cast<double>(PDU_[base + lo])) / static_cast<double>(n - lo);
    for (size_t k = 0; k < nd_; ++k) out[k] += FU_[(base + lo) * nd_ + k];
    for (uint32_t i = lo; i < n; ++i) add_user(uperm_[b + i], y, out);
  }

  Vec eval(int64_t s) const {
    Vec out{};
    size_t nc = cperm_.size();
    double sd = static_cast<double>(s);
    if (s >= total_) {
      for (size_t k = 0; k < nd_; ++k) out[k] = FC_[nc * nd_ + k];
      return out;
    }
    size_t lo = 0, hi = nc - 1;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      uint32_t c = cperm_[mid];
      double f = static_cast<double>(PDC_[mid]) +
                 static_cast<double>(Dc_[c]) / weight_[c] * static_cast<double>(PW_[nc] - PW_[mid]);
      if (f > sd)
        hi = mid;
      else
        lo = mid + 1;
    }
    double level = (sd - static_cast<double>(PDC_[lo])) / static_cast<double>(PW_[nc] - PW_[lo]);
    for (size_t k = 0; k < nd_; ++k) out[k] = FC_[lo * nd_ + k];
    for (size_t i = lo; i < nc; ++i) add_class(cperm_[i], level * weight_[cperm_[i]], out);
    return out;
  }

  /// > 0 when `v` does not fit the room (with a hair of slack: the exact
  /// check decides): the largest relative excess.
  double excess(const Vec& v) const {
    double worst = -kInf;
    for (size_t k = 0; k < nd_; ++k)
      worst = std::max(worst, (v[k] - room_[k] * (1 + 1e-12) - 1e-9) / std::max(room_[k], 1.0));
    return worst;
  }

  /// The exact resources of the current shares: whole units and fractions.
  void sum_exact(std::array<int64_t, kMaxDimensions>& whole, std::array<double, kMaxDimensions>& frac) const {
    for (size_t k = 0; k < nd_; ++k) {
      int64_t w = 0;
      double fr = 0;
      for (size_t p = 0; p < jobs_.size(); ++p) {
        int64_t r = r_[p * nd_ + k];
        if (alloc_[p] <= 0 || r <= 0) continue;
        double f = 0;
        w += floor_mul_div(alloc_[p], r, delta_[p], dir_[p * nd_ + k], inv_delta_[p], f);
        fr += f;
      }
      whole[k] = w;
      frac[k] = fr;
    }
  }

  /// Do the exact shares at budget s fit the room?
  bool exact_fits(int64_t s) {
    allocate(s);
    sum_exact(sum_whole_, sum_frac_);
    sums_valid_ = true;
    for (size_t k = 0; k < nd_; ++k) {
      int64_t room = room_exact_[m_.dims[k]];
      if (sum_whole_[k] > room || static_cast<double>(room - sum_whole_[k]) + 1e-6 < sum_frac_[k])
        return false;
    }
    return true;
  }

  /// The largest s in [lo, hi) whose evaluation fits (Illinois-style regula
  /// falsi on the piecewise-linear excess, with a bisection every 4th step).
  int64_t search(int64_t lo, int64_t hi) const {
    double glo = excess(eval(lo));
    double ghi = excess(eval(hi));
    if (glo > 0 || ghi <= 0) return lo;  // cannot happen: lo fits, hi does not
    int side = 0;
    for (int iter = 0; iter < 200; ++iter) {
      if (hi - lo <= 1) break;
      int64_t s;
      if (iter % 4 == 3 || !(ghi > glo)) {
        s = lo + (hi - lo) / 2;
      } else {
        double t = glo / (glo - ghi);
        s = lo + static_cast<int64_t>(static_cast<double>(hi - lo) * t);
      }
      s = std::clamp(s, lo + 1, hi - 1);
      double gs = excess(eval(s));
      if (gs <= 0) {
        lo = s;
        glo = gs;
        if (side == -1) ghi /= 2;
        side = -1;
      } else {
        hi = s;
        ghi = gs;
        if (side == 1) glo /= 2;
        side = 1;
      }
    }
    return lo;
  }

  /// Exact shares at budget s, rounded down at every level.
  void allocate(int64_t s) {
    allocated_ = true;
    allocated_s_ = s;
    sums_valid_ = false;
    size_t nc = cperm_.size();
    int64_t W = PW_[nc];
    size_t k = 0;
    if (s >= total_) {
      k = nc;
    } else {
      while (k < nc) {
        uint32_t c = cperm_[k];
        // Class k is satisfied if Dc/w <= (s - PDC[k]) / (W - PW[k]).
        i128 lhs = static_cast<i128>(Dc_[c]) * (W - PW_[k]);
        i128 rhs = static_cast<i128>(s - PDC_[k]) * weight_[c];
        if (lhs > rhs) break;
        ++k;
      }
    }
    for (size_t i = 0; i < nc; ++i) {
      uint32_t c = cperm_[i];
      int64_t budget =
          i < k ? Dc_[c] : static_cast<int64_t>(static_cast<i128>(s - PDC_[k]) * weight_[c] / (W - PW_[k]));
      allocate_class(c, budget);
    }
  }

  void allocate_class(uint32_t c, int64_t budget) {
    uint32_t b = class_user_begin_[c], n = class_user_end_[c] - b;
    size_t base = b + c;
    uint32_t k = 0;
    while (k < n && PDU_[base + k] + static_cast<int64_t>(n - k) * Du_[uperm_[b + k]] <= budget) ++k;
    int64_t y = k < n ? (budget - PDU_[base + k]) / static_cast<int64_t>(n - k) : 0;
    for (uint32_t i = 0; i < n; ++i) allocate_user(uperm_[b + i], i < k ? Du_[uperm_[b + i]] : y);
  }

  void allocate_user(uint32_t u, int64_t budget) {
    uint32_t b = user_job_begin_[u], g = user_job_end_[u] - b;
    size_t base = b + u;
    uint32_t k = 0;
    while (k < g && PD_[base + k] + static_cast<int64_t>(g - k) * D_[perm_[b + k]] <= budget) ++k;
    int64_t x = k < g ? (budget - PD_[base + k]) / static_cast<int64_t>(g - k) : 0;
    for (uint32_t i = 0; i < g; ++i) alloc_[perm_[b + i]] = i < k ? D_[perm_[b + i]] : x;
  }

  Model& m_;
  size_t nd_;
  // The current allocation (valid until prepare() re-sorts) and its exact sums.
  bool allocated_ = false;
  int64_t allocated_s_ = 0;
  bool sums_valid_ = false;
  std::array<int64_t, kMaxDimensions> sum_whole_{};
  std::array<double, kMaxDimensions> sum_frac_{};
  Vec room_{};
  Resources room_exact_;
  // Jobs grouped by user, users by class (construction order).
  std::vector<uint32_t> jobs_;
  std::vector<int64_t> D_;
  std::vector<Share> delta_;
  std::vector<double> inv_delta_;
  std::vector<int64_t> r_;
  std::vector<double> dir_;
  std::vector<int64_t> alloc_;
  std::vector<uint32_t> user_job_begin_, user_job_end_;
  std::vector<uint32_t> class_user_begin_, class_user_end_;
  std::vector<int64_t> weight_;
  // prepare(): orders and prefix sums (see there).
  std::vector<uint32_t> perm_, uperm_, cperm_;
  std::vector<int64_t> PD_, Du_, PDU_, Dc_, PDC_, PW_;
  std::vector<double> PF_, SD_, Fu_, FU_, Fc_, FC_;
  int64_t total_ = 0;
};

/// Room left, with unlimited dimensions shown as such.
std::string room_text(const Resources& r) {
  std::string out;
  for (DimensionId d = 0; d < kMaxDimensions; ++d) {
    if (r[d] == 0) continue;
    if (!out.empty()) out += ',';
    out += std::string(DimensionRegistry::name(d)) + "=" +
           (r[d] >= kUnlimited ? "unlimited" : format_quantity(d, r[d]));
  }
  return out.empty() ? "nothing" : out;
}

Resources clamp_sub(const Resources& a, const Resources& b) {
  Resources out;
  for (DimensionId d = 0; d < kMaxDimensions; ++d) out.set(d, std::max<int64_t>(0, a[d] - b[d]));
  return out;
}

}  // namespace

void compute_fair_shares(Model& m) {
  const int64_t quantum = m.snapshot->settings.quantum;
  std::vector<Resources> leftover(m.pools.size());
  std::vector<Resources> committed(m.pools.size());

  // What non-preemptible work already holds counts against allotments.
  std::vector<Resources> np_user = m.np_user_usage;
  std::vector<Resources> np_group = m.np_group_usage;
  std::vector<char> node_taken(m.nodes.size(), 0);
  std::vector<char> node_has_np(m.nodes.size(), 0);
  for (size_t n = 0; n < m.nodes.size(); ++n) {
    node_taken[n] = m.nodes[n].reserved;
    node_has_np[n] = m.nodes[n].has_non_preemptible;
  }
  m.fair.assign(m.jobs.size(), 0);
  for (uint32_t ji : m.np_jobs) {
    auto& j = m.jobs[ji];
    j.granted = false;
    j.grant_reason.clear();
    if (j.policy == ClassPolicy::reserve && j.running == 0) {
      // A reserve gets its machine below; until then it asks for its request.
      j.reserve_node = kNone;
      Resources request = j.info->per_task;
      if (quantum > 0) request.set(dim::memory, ceil_div(request[dim::memory], quantum) * quantum);
      j.per_task = request;
      j.delta = dominant_share_ceil(request, m.pools[j.pool].scope_capacity);
    }
  }

  auto add_committed = [&](uint32_t pool, const Resources& v) {
    for (uint32_t p = pool; p != kNone; p = m.pools[p].parent) committed[p] += v;
  };
  auto limit_room = [&](uint32_t pool) {
    Resources room;
    for (DimensionId d = 0; d < kMaxDimensions; ++d) room.set(d, kUnlimited);
    for (uint32_t p = pool; p != kNone; p = m.pools[p].parent) {
      const auto& limits = m.pools[p].spec->resource_limits;
      for (DimensionId d = 0; d < kMaxDimensions; ++d)
        if (limits.has(d))
          room.set(d, std::max<int64_t>(0, std::min(room[d], limits.values[d] - committed[p][d])));
    }
    return room;
  };

  for (uint32_t p : m.postorder) {
    auto& pool = m.pools[p];
    // Running non-preemptible work cannot be moved: it is taken first.
    Resources np_running;
    for (const auto& cls_index : pool.classes) {
      const auto& cls = m.classes[cls_index];
      if (cls.spec->policy == ClassPolicy::fair_share) continue;
      for (uint32_t g : cls.groups)
        for (uint32_t ji : m.groups[g].jobs)
          for (uint32_t a : m.jobs[ji].allocs())
            if (!m.allocs[a].lost && !m.allocs[a].outside) np_running += m.allocs[a].res;
    }
    Resources own_room = clamp_sub(pool.own_capacity, np_running);
    Resources room = own_room;
    for (uint32_t c : pool.children) room += leftover[c];
    add_committed(p, np_running);

    for (size_t t = 0; t < pool.classes.size();) {
      int32_t priority = m.classes[pool.classes[t]].spec->priority;
      size_t end = t;
      while (end < pool.classes.size() && m.classes[pool.classes[end]].spec->priority == priority) ++end;
      // 1. Non-preemptible requests of the tier, in submit order.
      std::vector<uint32_t> requests;
      std::vector<uint32_t> fair_classes;
      for (size_t i = t; i < end; ++i) {
        const auto& cls = m.classes[pool.classes[i]];
        if (cls.spec->policy == ClassPolicy::fair_share) {
          fair_classes.push_back(pool.classes[i]);
          continue;
        }
        for (uint32_t g : cls.groups)
          for (uint32_t ji : m.groups[g].jobs) requests.push_back(ji);
      }
      std::sort(requests.begin(), requests.end(), [&](uint32_t a, uint32_t b) {
        const auto& x = *m.jobs[a].info;
        const auto& y = *m.jobs[b].info;
        return x.submit_time != y.submit_time ? x.submit_time < y.submit_time : x.id < y.id;
      });
      for (uint32_t ji : requests) {
        auto& job = m.jobs[ji];
        const auto& cls = *m.classes[job.cls].spec;
        m.fair[ji] = job.usage;
        if (job.unresolvable || job.pending == 0) continue;
        Resources need = job.per_task.times(job.pending);
        if (cls.policy == ClassPolicy::reserve) {
          // A machine of the requested size, preferring one nothing runs on.
          uint32_t best = kNone;
          for (uint32_t n : pool.nodes) {
            const auto& node = m.nodes[n];
            if (!node.schedulable || node_taken[n] || node_has_np[n]) continue;
            if (!reserve_matches(job.info->per_task, node.info->capacity, quantum)) continue;
            if (!label_selectors_match(job.info->constraints, node.info->labels)) continue;
            if (best == kNone || node.allocs.size() < m.nodes[best].allocs.size()) best = n;
          }
          if (best == kNone) {
            job.grant_reason = "every machine of the requested size in pool '" + pool.spec->name +
                               "' is reserved or runs non-preemptible work";
            continue;
          }
          need = m.nodes[best].info->capacity;
          if (quantum > 0) need.set(dim::memory, need[dim::memory] / quantum * quantum);
          job.per_task = need;
          job.delta = dominant_share_ceil(need, pool.scope_capacity);
          job.reserve_node = best;
        }
        Resources lroom = limit_room(p);
        std::string why;
        const Limits& user_limit = *m.users[job.user].allotment;
        const Limits* class_limit = &cls.allotment;
        for (const auto& [name, limits] : cls.user_allotments)
          if (name == m.users[job.user].name) class_limit = &limits;
        if (!need.fits_in(own_room)) {
          why = "pool '" + pool.spec->name + "' has " + room_text(own_room) +
                " left for non-preemptible work at priority " + std::to_string(priority) +
                ", the request needs " + need.to_string();
        } else if (!need.fits_in(lroom)) {
          why = "the resource_limits of pool '" + pool.spec->name + "' or a parent leave " +
                room_text(lroom) + ", the request needs " + need.to_string();
        } else if (!user_limit.allows(np_user[job.user] + need)) {
          why = "user '" + std::string(m.users[job.user].name) + "' would exceed the allotment " +
                user_limit.to_string() + " (holds " + np_user[job.user].to_string() + ", asks " +
                need.to_string() + ")";
        } else if (!class_limit->allows(np_group[job.group] + need)) {
          why = "user '" + std::string(m.users[job.user].name) + "' would exceed the allotment " +
                class_limit->to_string() + " of class '" + cls.name + "' (holds " +
                np_group[job.group].to_string() + ", asks " + need.to_string() + ")";
        }
        if (!why.empty()) {
          job.grant_reason = std::move(why);
          if (cls.policy == ClassPolicy::reserve) job.reserve_node = kNone;
          continue;
        }
        job.granted = true;
        if (cls.policy == ClassPolicy::reserve) node_taken[job.reserve_node] = 1;
        m.fair[ji] = static_cast<Share>(std::min<i128>(
            static_cast<i128>(job.running + job.pending) * job.delta, std::numeric_limits<int64_t>::max()));
        np_user[job.user] += need;
        np_group[job.group] += need;
        own_room = clamp_sub(own_room, need);
        room = clamp_sub(room, need);
        add_committed(p, need);
      }
      // 2. fair_share classes of the tier.
      if (!fair_classes.empty()) {
        Resources lroom = limit_room(p);
        TierSolver solver(m, fair_classes);
        Resources taken = solver.solve(room.min(lroom));
        room = clamp_sub(room, taken);
        own_room = clamp_sub(own_room, taken);
        add_committed(p, taken);
      }
      t = end;
    }
    leftover[p] = room;
  }
}

Resources fair_share_vector(const ModelJob& job) {
  Resources out;
  if (job.delta <= 0 || job.fair <= 0) return out;
  for (DimensionId d = 0; d < kMaxDimensions; ++d)
    if (job.per_task[d] > 0) out.set(d, mul_div_floor(job.fair, job.per_task[d], job.delta));
  return out;
}

}  // namespace claimsched::core::policy
