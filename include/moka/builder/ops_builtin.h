// Typed DSL helpers for moka's built-in operators, in Caffe2's spelling (`ops::Add`, `ops::EQ`,
// `ops::CountUp`, ...): each adds one operator to the active builder's current net.
#pragma once

#include "moka/builder/ops.h"

namespace moka::ops {

// Every helper is `ops::op("<Type>", inputs, outputs, args)`; see `moka ops <Type>` for the
// operator's inputs, outputs and arguments. Helpers of one-output operators return that output;
// the others return the list. Outputs default to Caffe2's automatic `<net>/<Type>` name, except
// where noted.
//
//   moka::BlobRef s = moka::ops::Add({a, b});            // "<net>/Add"
//   moka::ops::Add({total, s}, {total});                 // in place
//   moka::BlobRef f = moka::ops::Cast(s, {}, {{"to", moka::DType::Float}});
//   moka::BlobRef c = moka::ops::CreateCounter({}, {"counter"}, {{"init_count", 3}});

// ---- math ----
BlobRef Add(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef Sub(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef Mul(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef Div(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef Sum(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});

// ---- comparison and logic ----
BlobRef EQ(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef NE(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef LT(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef LE(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef GT(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef GE(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef And(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef Or(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef Xor(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef Not(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});

// ---- conversion and utilities ----
/// Needs the `to` argument: `ops::Cast(x, {}, {{"to", DType::Int32}})`.
BlobRef Cast(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef Copy(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
/// No outputs by default (Caffe2's `net.Print(x, [])`).
BlobRefs Print(Inputs inputs, Outputs outputs = 0, std::vector<Arg> args = {});
BlobRef GetAllBlobNames(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef CreateMutex(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});
/// In place: `ops::Iter(counter, {counter})`.
BlobRef Iter(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});
/// `ops::AtomicIter({mutex, counter}, {counter})`.
BlobRef AtomicIter(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
/// Three outputs by default (keys, values, timestamps).
BlobRefs StatRegistryExport(Inputs inputs = {}, Outputs outputs = 3, std::vector<Arg> args = {});

// ---- fills ----
BlobRef ConstantFill(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef GivenTensorFill(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef GivenTensorDoubleFill(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef GivenTensorIntFill(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef GivenTensorInt64Fill(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef GivenTensorBoolFill(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef GivenTensorStringFill(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});

// ---- counters (docs/operators.md §2) ----
BlobRef CreateCounter(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});
/// Zero or one output (the previous count); one automatic output by default, as in Caffe2.
BlobRefs ResetCounter(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef CountDown(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef CountUp(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef CheckCounterDone(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef RetrieveCount(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});

// ---- timers (docs/operators.md §3) ----
BlobRef TimerBegin(Inputs inputs = {}, Outputs outputs = {}, std::vector<Arg> args = {});
/// No outputs by default.
BlobRefs TimerEnd(Inputs inputs, Outputs outputs = 0, std::vector<Arg> args = {});
BlobRef TimerGet(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});
BlobRef TimerGetAndEnd(Inputs inputs, Outputs outputs = {}, std::vector<Arg> args = {});

}  // namespace moka::ops
