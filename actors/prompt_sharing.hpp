#pragma once

// CAF's work-sharing scheduler policy, except that a worker is woken after
// the queue's lock is released, not while it is held. CAF's version notifies
// under the lock: the woken worker's first act is to take that lock, which
// the waker still holds, so it sleeps again on the mutex and needs a second
// wake-up when the waker lets go (glibc's condition variables do not hand a
// waiter over to the mutex). In the e2e bench's server that pair was 14% of
// its CPU (__lll_lock_wait and __lll_lock_wake under pthread_cond_signal).
// Notifying after the unlock is safe: a worker checks the queue under the
// lock before it waits, so a job pushed before it waits is seen, and one
// pushed after finds it waiting.

#include <caf/policy/work_sharing.hpp>
#include <caf/scheduler/coordinator.hpp>
#include <mutex>

namespace claimsched::actors {

class PromptSharing : public caf::policy::work_sharing {
 public:
  template <class Coordinator>
  void enqueue(Coordinator* self, caf::resumable* job) {
    queue_type one;
    one.push_back(job);  // allocates outside the lock
    auto& data = d(self);
    {
      std::lock_guard<std::mutex> guard(data.lock);
      data.queue.splice(data.queue.end(), one);
    }
    data.cv.notify_one();
  }

  template <class Coordinator>
  void central_enqueue(Coordinator* self, caf::resumable* job) {
    enqueue(self, job);
  }

  template <class Worker>
  void external_enqueue(Worker* self, caf::resumable* job) {
    enqueue(self->parent(), job);
  }

  template <class Worker>
  void internal_enqueue(Worker* self, caf::resumable* job) {
    enqueue(self->parent(), job);
  }

  template <class Worker>
  void resume_job_later(Worker* self, caf::resumable* job) {
    enqueue(self->parent(), job);
  }
};

}  // namespace claimsched::actors
