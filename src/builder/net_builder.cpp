// moka::NetBuilder: naming, children, the stop blob, freezing, conversion to a step, the
// Net-name hook, and the setup attribute of the DSL's setup blocks.
#include "moka/builder/net_builder.h"

#include <fmt/format.h>

#include "moka/builder/control_ops_util.h"
#include "moka/core/error.h"

namespace moka {
namespace detail {

struct NetBuilderState {
  std::string name;
  std::vector<NetBuilderChild> children;
  std::optional<Net> current_net;
  std::optional<BlobRef> stop_blob;
  bool stop_blob_required = false;
  bool frozen = false;
  bool use_control_ops = false;
  BlobNameSet init_lexical_scope;
  BlobNameSet lexical_scope;
  std::shared_ptr<NetBuilderExtension> extension;
};

}  // namespace detail

namespace {

// Caffe2's Net.current_prefix(): the innermost active builder's name.
std::string active_builder_name() {
  const NetBuilder* b = NetBuilder::current(false);
  return b ? b->name() : std::string();
}

}  // namespace

NetBuilder::NetBuilder() : NetBuilder(NetBuilderOptions{}) {}

NetBuilder::NetBuilder(const NetBuilderOptions& options) : state_(std::make_shared<detail::NetBuilderState>()) {
  // Installed here rather than by a static initialiser: a program that never makes a builder
  // never needs it, and a static library might drop an unreferenced initialiser.
  detail::set_net_builder_name_source(&active_builder_name);
  if (!options.fullname.empty() && !options.name.empty())
    throw InvalidInput(fmt::format("Cannot set both _fullname and name (fullname \"{}\", name \"{}\")",
                                   options.fullname, options.name));
  if (!options.fullname.empty()) {
    state_->name = options.fullname;
  } else {
    const NetBuilder* parent = current(false);
    const std::string prefix = parent ? parent->name() : std::string();
    state_->name = prefix.empty() ? options.name : (options.name.empty() ? prefix : prefix + "/" + options.name);
  }
  state_->stop_blob = options.stop_blob;
  if (state_->stop_blob && state_->stop_blob->empty())
    throw InvalidInput(fmt::format("NetBuilder ({}): the given stop blob is an empty BlobRef", state_->name));
  state_->stop_blob_required = options.stop_blob_required;
  state_->use_control_ops = options.use_control_ops;
  if (state_->use_control_ops && (state_->stop_blob || state_->stop_blob_required))
    throw InvalidInput(fmt::format("Stop blobs are not used with control operators (NetBuilder ({}))", state_->name));
  if (NetBuilder* parent = current(false)) {
    parent->update_lexical_scope();
    state_->init_lexical_scope = parent->state_->lexical_scope;
  }
  for (const BlobRef& b : options.initial_scope) {
    if (b.empty())
      throw InvalidInput(fmt::format("NetBuilder ({}): initial_scope holds an empty BlobRef", state_->name));
    state_->init_lexical_scope.insert(b.name());
  }
  state_->lexical_scope = state_->init_lexical_scope;
}

NetBuilderExtension::~NetBuilderExtension() = default;

const std::string& NetBuilder::name() const noexcept { return state_->name; }
const std::optional<BlobRef>& NetBuilder::existing_stop_blob() const noexcept { return state_->stop_blob; }
bool NetBuilder::stop_blob_required() const noexcept { return state_->stop_blob_required; }
bool NetBuilder::is_frozen() const noexcept { return state_->frozen; }
bool NetBuilder::use_control_ops() const noexcept { return state_->use_control_ops; }
const BlobNameSet& NetBuilder::lexical_scope() const noexcept { return state_->lexical_scope; }
const std::vector<NetBuilderChild>& NetBuilder::children() const noexcept { return state_->children; }
void NetBuilder::set_extension(std::shared_ptr<NetBuilderExtension> extension) {
  state_->extension = std::move(extension);
}
NetBuilderExtension* NetBuilder::extension() const noexcept { return state_->extension.get(); }

void NetBuilder::update_lexical_scope() {
  BlobNameSet scope = state_->init_lexical_scope;
  for (const auto& child : state_->children) {
    if (const Net* n = std::get_if<Net>(&child)) {
      const BlobNameSet used = used_blob_names(n->proto());
      scope.insert(used.begin(), used.end());
    } else if (const NetBuilder* b = std::get_if<NetBuilder>(&child); b && b->use_control_ops()) {
      scope.insert(b->state_->lexical_scope.begin(), b->state_->lexical_scope.end());
    }
  }
  state_->lexical_scope = std::move(scope);
}

void NetBuilder::reset_children(std::vector<NetBuilderChild> children) {
  state_->children = std::move(children);
  state_->current_net.reset();
  if (!state_->children.empty()) {
    if (const Net* n = std::get_if<Net>(&state_->children.back())) state_->current_net = *n;
  }
  state_->lexical_scope = state_->init_lexical_scope;
}

void NetBuilder::check_no_control_ops(const char* what) const {
  if (state_->use_control_ops)
    throw InvalidInput(
        fmt::format("Stop blobs are not used with control operators: {} inside NetBuilder ({}), a control-op block "
                    "(IfNet/Else/WhileNet/Condition)",
                    what, state_->name));
}

void NetBuilder::check_mutable() const {
  if (state_->frozen) throw InvalidInput(fmt::format("This NetBuilder ({}) has been built already.", state_->name));
}

void NetBuilder::add(NetBuilderChild child) {
  check_mutable();
  if (state_->use_control_ops) {
    const NetBuilder* nested = std::get_if<NetBuilder>(&child);
    if (!std::holds_alternative<Net>(child) && !(nested && nested->use_control_ops()))
      throw InvalidInput(
          fmt::format("Expected Net or NetBuilder with control ops: NetBuilder ({}) is a control-op block (IfNet/Else/"
                      "WhileNet/Condition) and cannot hold {}",
                      state_->name, nested ? "a loop, If, stop guard or other step builder" : "an ExecutionStep"));
  }
  if (const NetBuilder* nested = std::get_if<NetBuilder>(&child)) {
    // A builder inside itself would make its step contain itself (and its state a cycle).
    std::function<bool(const NetBuilder&)> contains_this = [&](const NetBuilder& b) {
      if (b == *this) return true;
      for (const auto& c : b.state_->children) {
        if (const NetBuilder* n = std::get_if<NetBuilder>(&c); n && contains_this(*n)) return true;
      }
      return false;
    };
    if (contains_this(*nested))
      throw InvalidInput(fmt::format("NetBuilder ({}) cannot be added to itself", state_->name));
  }
  state_->current_net.reset();
  if (const Net* n = std::get_if<Net>(&child)) state_->current_net = *n;
  state_->children.push_back(std::move(child));
}

Net NetBuilder::current_net(const std::optional<std::string>& net_name) {
  check_mutable();
  if (!state_->current_net || net_name) add(Net(net_name.value_or(std::string())));
  return *state_->current_net;
}

BlobRef NetBuilder::stop_blob() {
  check_no_control_ops("stop_blob()");
  if (!state_->stop_blob) {
    Net net = current_net();
    BlobRef blob = net.next_name("stop_blob");
    net.Const(false, {.blob_out = blob});
    state_->stop_blob = blob;
    const Net* first = std::get_if<Net>(&state_->children.front());
    if (!(first && *first == net)) {
      // The blob is reset where it is first used, but steps repeat: a reset at the start keeps
      // a stop of one run from ending the next one before the blob's first use.
      Net init("stop_blob_init");
      init.Const(false, {.blob_out = blob});
      state_->children.insert(state_->children.begin(), init);
    }
  }
  return *state_->stop_blob;
}

void NetBuilder::stop_if(const BlobRef& blob) {
  check_no_control_ops("stop_if()");
  if (blob.empty()) throw InvalidInput(fmt::format("NetBuilder ({}): stop_if got an empty BlobRef", state_->name));
  BlobRef stop = stop_blob();
  current_net().op("Or", {stop, blob}, {stop});
  state_->current_net.reset();
}

void NetBuilder::freeze() {
  for (auto& child : state_->children) {
    if (NetBuilder* nested = std::get_if<NetBuilder>(&child)) nested->freeze();
  }
  state_->current_net.reset();
  state_->frozen = true;
}

const std::vector<NetBuilderChild>& NetBuilder::get() {
  freeze();
  return state_->children;
}

void NetBuilder::run_body(const std::function<void()>& body, const BuildHooks& hooks) {
  check_mutable();
  {
    ContextGuard<NetBuilder> guard(*this);
    try {
      if (hooks.on_enter) hooks.on_enter();
      body();
      if (hooks.on_exit) hooks.on_exit();
      if (state_->use_control_ops && !state_->children.empty()) {
        // Caffe2's NetBuilder.__exit__ with _use_control_ops: one net, whose external outputs are
        // only the names of the scope this block was made in.
        std::vector<NetBuilderChild> children = std::move(state_->children);
        reset_children();
        std::optional<Net> merged = merge_nets(children, state_->lexical_scope);
        reset_children({std::move(*merged)});
      }
    } catch (...) {
      freeze();
      throw;
    }
  }
  freeze();
  if (state_->stop_blob_required && !state_->stop_blob)
    throw InvalidInput(
        fmt::format("This NetBuilder ({}) requires a stop condition to be set with `stop` or `stop_if`", state_->name));
}

ExecutionStep to_execution_step(NetBuilder& builder, const std::string& default_name) {
  std::vector<StepOrNet> items;
  for (const NetBuilderChild& child : builder.get()) {
    std::visit([&](const auto& x) { items.emplace_back(x); }, child);
  }
  StepOptions options;
  if (const auto& stop = builder.existing_stop_blob()) options.should_stop_blob = *stop;
  return execution_step(default_name.empty() ? builder.name() : default_name, StepsOrNets(std::move(items)), options);
}

std::vector<StepOrNet> SetupBuilder::setup(Net& /*init_net*/) {
  if (type_ != Type::Init) return {};
  return {StepOrNet(to_execution_step(builder_))};
}

std::vector<StepOrNet> SetupBuilder::exit(Net& /*exit_net*/) {
  if (type_ != Type::Exit) return {};
  return {StepOrNet(to_execution_step(builder_))};
}

}  // namespace moka
