// A file of the operators layer that includes a header of exec, a layer above it: compiled by the ctest test
// Layout.UpwardIncludeFailsToCompile in the operators layer's view of the tree, where it must not compile.
#include "moka/operators/operator.h"  // its own layer: found (first, so the view is shown to hold it)

#include "moka/exec/simple_net.h"  // a layer above: "No such file or directory"
