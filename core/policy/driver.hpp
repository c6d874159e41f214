#pragma once

// The policy stage was called the policy driver; the actor layer still says so.

#include "core/policy/stage.hpp"
