// moka._C's binding of TextFileReader (moka/data/text_file_reader.h): Caffe2's text_file_reader module, with its
// argument names and defaults (docs/python.md §5).
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "data.h"
#include "moka/data/text_file_reader.h"
#include "moka/moka.h"

namespace moka::python {

namespace py = pybind11;

void bind_text_file_reader(py::module_& m) {
  py::class_<TextFileReader, Reader, std::shared_ptr<TextFileReader>>(
      m, "TextFileReader",
      "Reads the rows of a delimited text file into a Struct of Scalars (text_file_reader.TextFileReader).")
      .def(py::init([](const py::handle& init_net, std::string filename, const schema::Field& schema,
                       int64_t num_passes, int64_t batch_size, const std::string& delimiter) {
             if (delimiter.size() != 1)
               throw InvalidInput("TextFileReader: delimiter must be one character, not \"" + delimiter + "\"");
             Net init = net_argument(init_net, "TextFileReader");
             return std::make_shared<TextFileReader>(
                 init, std::move(filename), schema,
                 TextFileReaderOptions{.num_passes = num_passes, .batch_size = batch_size, .delimiter = delimiter[0]});
           }),
           py::arg("init_net"), py::arg("filename"), py::arg("schema"), py::arg("num_passes") = 1,
           py::arg("batch_size") = 1, py::arg("delimiter") = "\t")
      .def_property_readonly("filename", &TextFileReader::filename)
      .def_property_readonly("batch_size", &TextFileReader::batch_size)
      .def_property_readonly("_reader", [](const TextFileReader& r) {
        return py::module_::import("moka.core").attr("BlobReference")(r.reader_blob().name());
      });
}

}  // namespace moka::python
