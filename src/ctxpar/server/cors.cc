#include "ctxpar/server/cors.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "ctxpar/core/error.h"

namespace ctxpar::server {
namespace {

// Starlette's ALL_METHODS and SAFELISTED_HEADERS.
constexpr const char* kAllMethods[] = {"DELETE", "GET",  "HEAD", "OPTIONS",
                                       "PATCH",  "POST", "PUT",  "QUERY"};
constexpr const char* kSafelistedHeaders[] = {"Accept", "Accept-Language", "Content-Language",
                                              "Content-Type"};

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string strip(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Sets `name` in `headers`, replacing an earlier value.
void set(HeaderList& headers, const std::string& name, const std::string& value) {
  for (auto& [n, v] : headers) {
    if (n == name) {
      v = value;
      return;
    }
  }
  headers.emplace_back(name, value);
}

}  // namespace

std::vector<std::string> parse_cors_list(const std::string& flag, const std::string& value) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(value);
  } catch (const nlohmann::json::exception&) {
    CTXPAR_INPUT_FAIL("{} '{}' is not JSON: give a JSON list of strings, e.g. '[\"*\"]'", flag,
                      value);
  }
  CTXPAR_CHECK_INPUT(j.is_array(), "{} '{}' is not a JSON list: give e.g. '[\"*\"]'", flag, value);
  std::vector<std::string> out;
  for (const nlohmann::json& x : j) {
    CTXPAR_CHECK_INPUT(x.is_string(), "{} '{}' holds {}, not a string", flag, value, x.dump());
    out.push_back(x.get<std::string>());
  }
  return out;
}

CorsPolicy::CorsPolicy(CorsOptions options) : options_(std::move(options)) {
  any_origin_ = contains(options_.origins, "*");
  any_header_ = contains(options_.headers, "*");
  methods_ = contains(options_.methods, "*")
                 ? std::vector<std::string>(std::begin(kAllMethods), std::end(kAllMethods))
                 : options_.methods;
  // Sorted, as Python's sorted() orders str (by code point, which std::string's < matches).
  std::vector<std::string> names(std::begin(kSafelistedHeaders), std::end(kSafelistedHeaders));
  for (const std::string& h : options_.headers) {
    if (!contains(names, h)) names.push_back(h);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& h : names) header_names_.push_back(lower(h));

  preflight_headers_ = {{"Vary",
                         "Origin, Access-Control-Request-Method, Access-Control-Request-Headers, "
                         "Access-Control-Request-Private-Network"}};
  // A credentialed answer must name the origin, so "*" only goes out without credentials.
  if (any_origin_ && !options_.credentials)
    preflight_headers_.emplace_back("Access-Control-Allow-Origin", "*");
  preflight_headers_.emplace_back("Access-Control-Allow-Methods", join(methods_));
  preflight_headers_.emplace_back("Access-Control-Max-Age", "600");
  if (!any_header_) preflight_headers_.emplace_back("Access-Control-Allow-Headers", join(names));
  if (options_.credentials)
    preflight_headers_.emplace_back("Access-Control-Allow-Credentials", "true");
}

bool CorsPolicy::allowed_origin(const std::string& origin) const {
  return any_origin_ || contains(options_.origins, origin);
}

CorsPolicy::Preflight CorsPolicy::preflight(const std::string& origin, const std::string& method,
                                            const std::optional<std::string>& request_headers,
                                            bool private_network) const {
  Preflight p{200, "OK", preflight_headers_};
  std::vector<std::string> failures;
  if (!allowed_origin(origin)) {
    failures.push_back("origin");
  } else if (!any_origin_ || options_.credentials) {
    set(p.headers, "Access-Control-Allow-Origin", origin);
  }
  if (!contains(methods_, method)) failures.push_back("method");
  if (any_header_ && request_headers) {
    set(p.headers, "Access-Control-Allow-Headers", *request_headers);  // mirrored back
  } else if (request_headers) {
    size_t start = 0;
    while (true) {
      const size_t comma = request_headers->find(',', start);
      const std::string name = strip(lower(request_headers->substr(start, comma - start)));
      if (!contains(header_names_, name)) {
        failures.push_back("headers");
        break;
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (private_network) failures.push_back("private-network");
  if (!failures.empty()) {
    p.status = 400;
    p.body = "Disallowed CORS " + join(failures);
  }
  return p;
}

HeaderList CorsPolicy::response_headers(const std::string& origin, const std::string& vary) const {
  HeaderList h;
  if (any_origin_) h.emplace_back("Access-Control-Allow-Origin", "*");
  if (options_.credentials) h.emplace_back("Access-Control-Allow-Credentials", "true");
  // A credentialed answer, or one to a listed origin, names the origin.
  if ((any_origin_ && options_.credentials) || (!any_origin_ && allowed_origin(origin))) {
    set(h, "Access-Control-Allow-Origin", origin);
  }
  h.emplace_back("Vary", vary.empty() ? "Origin" : vary + ", Origin");
  return h;
}

}  // namespace ctxpar::server
