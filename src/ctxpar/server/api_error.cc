#include "ctxpar/server/api_error.h"

#include <utility>

namespace ctxpar::server {
namespace {

std::string reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

}  // namespace

ApiError::ApiError(int status, std::string type, const std::string& message,
                   std::optional<std::string> param)
    : std::runtime_error(message),
      status_(status),
      type_(std::move(type)),
      param_(std::move(param)) {}

nlohmann::json ApiError::to_json() const {
  nlohmann::json error = {
      {"message", what()}, {"type", type_}, {"param", nullptr}, {"code", status_}};
  if (param_) error["param"] = *param_;
  return {{"error", error}};
}

ApiError bad_request(const std::string& message, std::optional<std::string> param) {
  return ApiError(400, "BadRequestError", message, std::move(param));
}

ApiError model_not_found(const std::string& model) {
  return ApiError(404, "NotFoundError", "The model `" + model + "` does not exist.", "model");
}

ApiError internal_error(const std::string& message) {
  return ApiError(500, "InternalServerError", message);
}

ApiError unavailable(const std::string& message) {
  return ApiError(503, "ServiceUnavailableError", message);
}

ApiError http_error(int status, const std::string& message) {
  return ApiError(status, reason_phrase(status), message);
}

}  // namespace ctxpar::server
