//===- Env.cpp - Reading runtime settings from the environment ------------===//

#include "common/Env.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace ptrain::runtime {

ptrain_status_t readEnvSeconds(const char *call, const char *name, double defaultSeconds, double &seconds) {
  seconds = defaultSeconds;
  const char *text = std::getenv(name);
  if (!text || !*text)
    return PTRAIN_OK;
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(value) || value <= 0.0)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s must be a positive number of seconds, got '%s'", name, text);
  seconds = value;
  return PTRAIN_OK;
}

ptrain_status_t readEnvInt(const char *call, const char *name, int64_t minValue, int64_t maxValue, int64_t &value) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s is not set", name);
  char *end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || parsed < minValue || parsed > maxValue)
    return fail(PTRAIN_ERROR_INVALID_ARGUMENT, call, "%s must be an integer in [%lld, %lld], got '%s'", name,
                static_cast<long long>(minValue), static_cast<long long>(maxValue), text);
  value = parsed;
  return PTRAIN_OK;
}

} // namespace ptrain::runtime
