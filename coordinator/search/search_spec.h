// What one phrase search asks for (`gtadoc grep`'s options, `POST /v1/search`'s fields), before
// its phrases are looked up (coordinator/search/phrase_search.h). Validated by validate_search
// (coordinator/pipeline/query_spec.h).
#pragma once

#include <string>
#include <vector>

#include "worker/query.h"

namespace gtadoc {

struct SearchSpec {
  std::vector<std::string> phrases;  ///< as given (split into words by prepare_search)
  bool any = false;                  ///< --any: documents holding some phrase (else every one)
  enum class Mode { kDocs, kCount, kLines } mode = Mode::kDocs;
  bool lowercase = false, alnum = false;
  bool ids = false;
  OutputFormat format = OutputFormat::kTsv;
};

}  // namespace gtadoc
