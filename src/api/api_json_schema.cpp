// parley_check_json_schema.
#include "api/api_guard.h"
#include "parley.h"
#include "text/json_schema.h"

using namespace parley;
using namespace parley::api;

extern "C" {

PARLEY_API parley_status parley_check_json_schema(const char* schema) {
  return guarded(__func__, [&] {
    check_arg(schema, "schema is NULL");
    check_arg(*schema, "schema is empty (a generation takes \"\" as no schema)");
    text::JsonSchema::compile(schema);
  });
}

}  // extern "C"
