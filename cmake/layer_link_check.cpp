// The program of a layer's link check (cmake/MokaLayers.cmake): it links every object of one layer, so a call
// from that layer into a layer above it is an undefined reference.
int main() { return 0; }
