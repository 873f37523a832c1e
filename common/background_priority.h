// Background work that should not slow the foreground: the calling thread's nice value raised,
// so that it takes a small share of the CPUs the foreground wants, and all of the idle ones.
#pragma once

namespace gtadoc {

/// Raises the calling thread's nice value to kBackgroundNice (Linux, where nice values are per
/// thread; threads it starts afterwards inherit it). Under contention such a thread gets about a
/// tenth of a CPU against one at nice 0, and never none, so work that someone waits for still
/// ends. Best effort: returns false where it changed nothing.
bool lower_to_background_priority() noexcept;

inline constexpr int kBackgroundNice = 10;

}  // namespace gtadoc
