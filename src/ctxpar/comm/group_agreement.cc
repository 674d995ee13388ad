#include "ctxpar/comm/group_agreement.h"

#include <exception>
#include <new>
#include <vector>

namespace ctxpar {
namespace {

// Per-rank outcome of the phase, as exchanged: 0 ok, 1 InputError, 2 any other failure.
constexpr int32_t kOk = 0, kInputFailure = 1, kOtherFailure = 2;

}  // namespace

void run_agreed(Communicator& group, const std::function<void()>& body) {
  int32_t outcome = kOk;
  std::string message;
  try {
    body();
  } catch (const InputError& e) {
    outcome = kInputFailure;
    message = e.what();
  } catch (const std::bad_alloc&) {
    outcome = kOtherFailure;
    message = "out of memory (std::bad_alloc)";
  } catch (const std::exception& e) {
    outcome = kOtherFailure;
    message = e.what();
  } catch (...) {
    outcome = kOtherFailure;
    message = "an exception not derived from std::exception";
  }
  Tensor mine = Tensor::empty({1}, DType::kI32);
  mine.data<int32_t>()[0] = outcome;
  const Tensor all = group.all_gather(mine, 0);  // [group size]
  int failed = -1, num_failed = 0;
  for (int r = 0; r < group.size(); ++r) {
    if (all.data<int32_t>()[r] == kOk) continue;
    if (failed < 0) failed = r;
    ++num_failed;
  }
  if (failed < 0) return;
  std::vector<uint8_t> bytes(message.begin(), message.end());
  group.broadcast_bytes(bytes, failed);
  std::string what = fmt::format("rank {}: {}", failed, std::string(bytes.begin(), bytes.end()));
  if (num_failed > 1) what += fmt::format(" (and {} more ranks failed)", num_failed - 1);
  throw GroupFailure(what, failed, all.data<int32_t>()[failed] == kInputFailure);
}

void rethrow_naming_rank(int rank) {
  try {
    throw;
  } catch (const GroupFailure&) {
    throw;  // already names the rank
  } catch (const InputError& e) {
    throw InputError(fmt::format("rank {}: {}", rank, e.what()));
  } catch (const std::bad_alloc&) {
    throw Error(fmt::format("rank {}: out of memory (std::bad_alloc)", rank));
  } catch (const std::exception& e) {
    throw Error(fmt::format("rank {}: {}", rank, e.what()));
  } catch (...) {
    throw Error(fmt::format("rank {}: an exception not derived from std::exception", rank));
  }
}

}  // namespace ctxpar
