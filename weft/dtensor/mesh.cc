#include "weft/dtensor/mesh.h"

#include <algorithm>
#include <set>

#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/dtensor/internal/text.h"

namespace weft::dtensor {

struct Mesh::Data {
  std::string name;
  std::vector<MeshDimension> dims;
  int64_t size = 1;
  std::vector<int64_t> local_device_ids;
  std::vector<std::string> local_devices;
  std::vector<std::string> global_devices;
};

namespace {

constexpr const char* kEmptyMesh = "empty_mesh";

// A device's name: not empty, and none of the string form's separators.
void check_device_name(const std::string& device) {
  WEFT_CHECK(!device.empty() && device.find_first_of(",|") == std::string::npos, InvalidArgument)
      << "Mesh: device name \"" << device << "\" is empty or holds ',' or '|'";
}

// "batch=2,model=4".
std::string dims_text(const std::vector<MeshDimension>& dims) {
  std::vector<std::string> parts;
  for (const MeshDimension& d : dims) parts.push_back(d.name + "=" + std::to_string(d.size));
  return internal::join(parts, ",");
}

}  // namespace

Mesh::Mesh(std::vector<MeshDimension> dims, std::vector<int64_t> local_device_ids,
           std::vector<std::string> local_devices, std::string name,
           std::vector<std::string> global_devices) {
  auto d = std::make_shared<Data>();
  WEFT_CHECK(!dims.empty(), InvalidArgument) << "Mesh: a mesh needs at least one dimension";
  WEFT_CHECK(name.find_first_of("|") == std::string::npos, InvalidArgument)
      << "Mesh: the name \"" << name << "\" holds '|'";
  std::set<std::string> names;
  for (const MeshDimension& dim : dims) {
    WEFT_CHECK(!dim.name.empty() && dim.name.find_first_of(",|= ") == std::string::npos,
               InvalidArgument)
        << "Mesh: dimension name \"" << dim.name << "\" is empty or holds one of \",|= \"";
    WEFT_CHECK(
        dim.name != kUnsharded && dim.name != kMatch && dim.name != "any" && dim.name != "scalar",
        InvalidArgument)
        << "Mesh: dimension name \"" << dim.name << "\" is reserved (a sharding spec)";
    WEFT_CHECK(names.insert(dim.name).second, InvalidArgument)
        << "Mesh: dimension \"" << dim.name << "\" is named twice";
    WEFT_CHECK(dim.size >= 1, InvalidArgument)
        << "Mesh: dimension \"" << dim.name << "\" has size " << dim.size << "; expected >= 1";
    d->size *= dim.size;
  }
  WEFT_CHECK(local_device_ids.size() == local_devices.size(), InvalidArgument)
      << "Mesh: " << local_device_ids.size() << " local device ids for " << local_devices.size()
      << " local devices";
  WEFT_CHECK(!local_devices.empty() && d->size % static_cast<int64_t>(local_devices.size()) == 0,
             InvalidArgument)
      << "Mesh: " << local_devices.size() << " local devices do not divide the mesh's " << d->size
      << " devices (each client holds as many)";
  std::set<int64_t> ids;
  for (int64_t id : local_device_ids) {
    WEFT_CHECK(id >= 0 && id < d->size, InvalidArgument)
        << "Mesh: local device id " << id << " is outside the mesh's " << d->size << " devices";
    WEFT_CHECK(ids.insert(id).second, InvalidArgument)
        << "Mesh: local device id " << id << " is given twice";
  }
  std::set<std::string> devices;
  for (const std::string& device : local_devices) {
    check_device_name(device);
    WEFT_CHECK(devices.insert(device).second, InvalidArgument)
        << "Mesh: local device \"" << device << "\" is given twice";
  }
  WEFT_CHECK(global_devices.empty() || static_cast<int64_t>(global_devices.size()) == d->size,
             InvalidArgument)
      << "Mesh: " << global_devices.size() << " global devices for a mesh of " << d->size;
  for (const std::string& device : global_devices) check_device_name(device);
  d->name = std::move(name);
  d->dims = std::move(dims);
  d->local_device_ids = std::move(local_device_ids);
  d->local_devices = std::move(local_devices);
  d->global_devices = std::move(global_devices);
  data_ = std::move(d);
}

const std::string& Mesh::name() const {
  static const std::string none;
  return data_ ? data_->name : none;
}

const std::vector<MeshDimension>& Mesh::dims() const {
  static const std::vector<MeshDimension> none;
  return data_ ? data_->dims : none;
}

std::vector<std::string> Mesh::dim_names() const {
  std::vector<std::string> out;
  for (const MeshDimension& d : dims()) out.push_back(d.name);
  return out;
}

std::vector<int64_t> Mesh::shape() const {
  std::vector<int64_t> out;
  for (const MeshDimension& d : dims()) out.push_back(d.size);
  return out;
}

int Mesh::rank() const { return static_cast<int>(dims().size()); }
int64_t Mesh::size() const { return data_ ? data_->size : 0; }

bool Mesh::contains_dim(const std::string& name) const {
  const auto& ds = dims();
  return std::any_of(ds.begin(), ds.end(), [&](const MeshDimension& d) { return d.name == name; });
}

int Mesh::dim_index(const std::string& name) const {
  const auto& ds = dims();
  for (size_t i = 0; i < ds.size(); ++i) {
    if (ds[i].name == name) return static_cast<int>(i);
  }
  throw InvalidArgument("Mesh: no dimension \"" + name + "\" in mesh " + to_string() +
                        " (its dimensions: " + internal::join(dim_names(), ", ") + ")");
}

int64_t Mesh::dim_size(const std::string& name) const {
  return dims()[static_cast<size_t>(dim_index(name))].size;
}

std::vector<int64_t> Mesh::global_device_ids() const {
  std::vector<int64_t> out(static_cast<size_t>(size()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(i);
  return out;
}

const std::vector<int64_t>& Mesh::local_device_ids() const {
  static const std::vector<int64_t> none;
  return data_ ? data_->local_device_ids : none;
}

const std::vector<std::string>& Mesh::local_devices() const {
  static const std::vector<std::string> none;
  return data_ ? data_->local_devices : none;
}

int Mesh::num_local_devices() const { return static_cast<int>(local_devices().size()); }

const std::vector<std::string>& Mesh::global_devices() const {
  static const std::vector<std::string> none;
  return data_ ? data_->global_devices : none;
}

std::vector<int64_t> Mesh::device_location(int64_t device_id) const {
  WEFT_CHECK(device_id >= 0 && device_id < size(), InvalidArgument)
      << "Mesh: device " << device_id << " is outside the mesh's " << size() << " devices";
  std::vector<int64_t> location(dims().size());
  for (size_t i = location.size(); i-- > 0;) {
    location[i] = device_id % dims()[i].size;
    device_id /= dims()[i].size;
  }
  return location;
}

int64_t Mesh::device_id(const std::vector<int64_t>& location) const {
  WEFT_CHECK(location.size() == dims().size(), InvalidArgument)
      << "Mesh: " << location.size() << " coordinates for a mesh of " << dims().size()
      << " dimensions";
  int64_t id = 0;
  for (size_t i = 0; i < location.size(); ++i) {
    WEFT_CHECK(location[i] >= 0 && location[i] < dims()[i].size, InvalidArgument)
        << "Mesh: coordinate " << location[i] << " is outside dimension \"" << dims()[i].name
        << "\" of size " << dims()[i].size;
    id = id * dims()[i].size + location[i];
  }
  return id;
}

std::vector<std::map<std::string, int64_t>> Mesh::local_device_locations() const {
  std::vector<std::map<std::string, int64_t>> out;
  for (int64_t id : local_device_ids()) {
    const std::vector<int64_t> location = device_location(id);
    std::map<std::string, int64_t>& named = out.emplace_back();
    for (size_t i = 0; i < location.size(); ++i) named[dims()[i].name] = location[i];
  }
  return out;
}

std::string Mesh::to_string() const {
  if (is_empty()) return kEmptyMesh;
  std::string text =
      name() + "|" + dims_text(dims()) + "|" + internal::join(global_device_ids(), ",") + "|" +
      internal::join(local_device_ids(), ",") + "|" + internal::join(local_devices(), ",");
  if (!global_devices().empty()) text += "|" + internal::join(global_devices(), ",");
  return text;
}

Mesh Mesh::from_string(const std::string& text) {
  if (text == kEmptyMesh) return Mesh();
  const std::vector<std::string> parts = internal::split(text, '|');
  WEFT_CHECK(parts.size() == 5 || parts.size() == 6, InvalidArgument)
      << "Mesh::from_string: \"" << text << "\" has " << parts.size()
      << " parts; expected \"name|dim=size,...|global ids|local ids|local devices[|global "
         "devices]\"";
  std::vector<MeshDimension> dims;
  for (const std::string& dim : internal::split(parts[1], ',')) {
    const std::vector<std::string> name_size = internal::split(dim, '=');
    WEFT_CHECK(name_size.size() == 2, InvalidArgument)
        << "Mesh::from_string: dimension \"" << dim << "\" of \"" << text << "\" is not name=size";
    dims.push_back({name_size[0], internal::parse_int(name_size[1], "Mesh::from_string")});
  }
  std::vector<int64_t> global_ids, local_ids;
  for (const std::string& id : internal::split(parts[2], ','))
    global_ids.push_back(internal::parse_int(id, "Mesh::from_string"));
  for (const std::string& id : internal::split(parts[3], ','))
    local_ids.push_back(internal::parse_int(id, "Mesh::from_string"));
  Mesh mesh(std::move(dims), std::move(local_ids), internal::split(parts[4], ','), parts[0],
            parts.size() == 6 ? internal::split(parts[5], ',') : std::vector<std::string>{});
  WEFT_CHECK(global_ids == mesh.global_device_ids(), InvalidArgument)
      << "Mesh::from_string: the global device ids of \"" << text << "\" are not 0 ... "
      << mesh.size() - 1 << " in order";
  return mesh;
}

bool Mesh::operator==(const Mesh& other) const {
  if (is_empty() || other.is_empty()) return is_empty() == other.is_empty();
  const Data& a = *data_;
  const Data& b = *other.data_;
  return a.name == b.name && a.dims == b.dims && a.local_device_ids == b.local_device_ids &&
         a.local_devices == b.local_devices && a.global_devices == b.global_devices;
}

Mesh create_mesh(const std::vector<MeshDimension>& dims, const std::vector<std::string>& devices,
                 const std::string& mesh_name) {
  std::vector<std::string> local = config::resolve_logical_devices(devices, "create_mesh");
  int64_t size = 1;
  for (const MeshDimension& d : dims) size *= d.size;
  WEFT_CHECK(size == static_cast<int64_t>(local.size()), InvalidArgument)
      << "create_mesh: the mesh " << dims_text(dims) << " has " << size << " devices, but "
      << local.size() << " devices " << (devices.empty() ? "are there" : "were given")
      << " (weft::config::set_logical_cpu_devices sets how many)";
  std::vector<int64_t> ids(local.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  return Mesh(dims, std::move(ids), std::move(local), mesh_name);
}

}  // namespace weft::dtensor
