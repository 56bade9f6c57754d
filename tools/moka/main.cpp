// moka command-line tool (placeholder).
int main() { return 0; }
