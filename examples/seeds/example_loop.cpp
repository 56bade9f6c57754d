// Seed `example_loop` (net_printer_test.py): nested ops::loop with an If/Elif/Else chain inside.
// The outer loop runs i = 0..9; the inner one j = 0..i-1; val = 10*i + j is added to total and
// to exactly one of total_large (>= 80), total_small (>= 50) or total_tiny.
#include <iostream>

#include "moka/moka.h"

namespace ops = moka::ops;

int main() {
  moka::TaskOutput total_out, large_out, small_out, tiny_out;

  moka::Task task([&] {
    moka::BlobRef total = ops::Const(0);
    moka::BlobRef total_large = ops::Const(0);
    moka::BlobRef total_small = ops::Const(0);
    moka::BlobRef total_tiny = ops::Const(0);
    ops::loop(10, [&](ops::Loop& loop) {
      moka::BlobRef outer = ops::Mul({loop.iter(), ops::Const(10)});
      ops::loop(loop.iter(), [&](ops::Loop& inner) {
        moka::BlobRef val = ops::Add({outer, inner.iter()});
        ops::If(ops::GE({val, ops::Const(80)}), [&] {
          ops::Add({total_large, val}, {total_large});
        }).Elif(ops::GE({val, ops::Const(50)}), [&] {
            ops::Add({total_small, val}, {total_small});
          }).Else([&] {
          ops::Add({total_tiny, val}, {total_tiny});
        });
        ops::Add({total, val}, {total});
      });
    });
    // Not in the seed (which only builds the task): hand the totals back to print them.
    total_out = moka::final_output(total);
    large_out = moka::final_output(total_large);
    small_out = moka::final_output(total_small);
    tiny_out = moka::final_output(total_tiny);
  });

  moka::LocalSession session;
  session.run(task);

  std::cout << "total=" << total_out.fetch<int64_t>() << "\n"
            << "total_large=" << large_out.fetch<int64_t>() << "\n"
            << "total_small=" << small_out.fetch<int64_t>() << "\n"
            << "total_tiny=" << tiny_out.fetch<int64_t>() << "\n";
}
