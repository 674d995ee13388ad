// Internal to the AMX kernels (*_amx.cc, compiled with -mamx-tile): the tile configuration
// LDTILECFG reads, and loading it.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ctxpar::kernels::detail {

// LDTILECFG's 64-byte operand, palette 1; tiles left at 0 rows × 0 bytes are unused.
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile t
  uint8_t rows[16] = {};
};

// Loads c into the calling thread's tile unit. GCC 12's _tile_loadconfig declares a read of
// only the first 8 bytes of its operand, so without the barrier the row and column stores
// into a local config are dropped as dead (SIGILL at the first tile instruction).
inline void load_tile_config(const AmxTileConfig& c) {
  __asm__ volatile("" : : "r"(&c) : "memory");
  _tile_loadconfig(&c);
}

}  // namespace ctxpar::kernels::detail
