#pragma once

// The partition scheduler: the pipeline of stages in core/pipeline/ (see
// core/README.md). This header stays for the layers above.

#include "core/pipeline/scheduler.hpp"
