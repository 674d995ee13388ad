// Making a failure on one rank a decision of the whole group, so every rank stops with the
// same message instead of the healthy ones waiting forever in their next collective.
#pragma once

#include <functional>
#include <string>

#include "ctxpar/comm/communicator.h"
#include "ctxpar/core/error.h"

namespace ctxpar {

// Thrown on every rank of a group by run_agreed when the phase failed on one or more ranks.
// what() is "rank <r>: <r's message>" for the lowest failing rank r (plus how many others
// failed), the same text on every rank, so one rank can report it for all.
class GroupFailure : public Error {
 public:
  GroupFailure(const std::string& what, int failed_rank, bool input_error)
      : Error(what), failed_rank_(failed_rank), input_error_(input_error) {}
  int failed_rank() const { return failed_rank_; }
  // Whether the failing rank's error was an InputError (the user's input is wrong).
  bool input_error() const { return input_error_; }

 private:
  int failed_rank_;
  bool input_error_;
};

// Runs body on this rank, then agrees with every rank of `group` on the outcome (two
// collectives on `group`): if body threw on any rank, every rank throws GroupFailure. Every
// rank of the group must call it, and body must not call collectives itself (a rank that
// failed would never join them). For the validation phases that precede a job's first
// collective: configuration, flags, prompts, checkpoint headers.
void run_agreed(Communicator& group, const std::function<void()>& body);

// Inside a catch block: rethrows the exception being handled with "rank <rank>: " in front of
// its message, keeping its kind (InputError stays an InputError; std::bad_alloc becomes an
// Error saying out of memory), so the one line a user sees names the rank that failed.
[[noreturn]] void rethrow_naming_rank(int rank);

}  // namespace ctxpar
