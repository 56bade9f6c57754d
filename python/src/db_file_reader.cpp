// moka._C's bindings of DBFileReader and CachedReader (moka/data/cached_reader.h): Caffe2's db_file_reader and
// cached_reader modules, with their argument names and defaults (docs/python.md §5).
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data.h"
#include "moka/data/cached_reader.h"
#include "moka/moka.h"

namespace moka::python {

namespace py = pybind11;

void bind_db_file_reader(py::module_& m) {
  py::class_<DBFileReader, Reader, std::shared_ptr<DBFileReader>>(
      m, "DBFileReader", "Reads a dataset saved as one blob per column in a DB file (db_file_reader.DBFileReader).")
      .def(py::init([](std::string db_path, std::string db_type, std::optional<std::string> name, int64_t batch_size,
                       bool loop_over, std::optional<std::vector<std::string>> field_names) {
             return std::make_shared<DBFileReader>(
                 std::move(db_path), std::move(db_type),
                 DBFileReaderOptions{.name = name.value_or(""),
                                     .batch_size = batch_size,
                                     .loop_over = loop_over,
                                     .field_names = field_names.value_or(std::vector<std::string>{})});
           }),
           py::arg("db_path"), py::arg("db_type"), py::arg("name") = py::none(), py::arg("batch_size") = 100,
           py::arg("loop_over") = false, py::arg("field_names") = py::none())
      .def_property_readonly("db_path", &DBFileReader::db_path)
      .def_property_readonly("db_type", &DBFileReader::db_type)
      .def_property_readonly("name", &DBFileReader::name)
      .def_property_readonly("batch_size", &DBFileReader::batch_size)
      .def_property_readonly("loop_over", &DBFileReader::loop_over)
      .def_property_readonly("ds", &DBFileReader::dataset);
  py::class_<CachedReader, DBFileReader, std::shared_ptr<CachedReader>>(
      m, "CachedReader",
      "A DBFileReader over a cache file built once from another reader (cached_reader.CachedReader).")
      .def(py::init([](const py::handle& original_reader, std::string db_path, std::string db_type,
                       std::optional<std::string> name, int64_t batch_size, bool loop_over) {
             return std::make_shared<CachedReader>(
                 reader_argument(original_reader, "CachedReader"), std::move(db_path), std::move(db_type),
                 CachedReaderOptions{.name = name.value_or(""), .batch_size = batch_size, .loop_over = loop_over});
           }),
           py::arg("original_reader"), py::arg("db_path"), py::arg("db_type") = "LevelDB", py::arg("name") = py::none(),
           py::arg("batch_size") = 100, py::arg("loop_over") = false)
      .def("build_cache_step", &CachedReader::build_cache_step, py::arg("overwrite") = false)
      .def_property_readonly("original_reader", &CachedReader::original_reader);
}

}  // namespace moka::python
