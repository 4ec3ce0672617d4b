// Mesh and Layout: TensorFlow's DTensor descriptions, their string forms and the errors that name
// what is wrong.
#include "weft/dtensor/mesh.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "weft/core/config.h"
#include "weft/core/errors.h"
#include "weft/dtensor/layout.h"
#include "weft/testing/dtensor_clients.h"

namespace weft::dtensor {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::string cpu(int i) { return "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(i); }

// The tutorial's 8 logical CPUs, for each test.
class DTensor : public weft::testing::LogicalDevices {};

TEST_F(DTensor, AMeshIsARowMajorGridOfTheLogicalDevices) {
  Mesh mesh = create_mesh({{"batch", 2}, {"model", 4}}, {}, "grid");
  EXPECT_EQ(mesh.name(), "grid");
  EXPECT_EQ(mesh.dim_names(), (std::vector<std::string>{"batch", "model"}));
  EXPECT_EQ(mesh.shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(mesh.rank(), 2);
  EXPECT_EQ(mesh.size(), 8);
  EXPECT_EQ(mesh.dim_size("model"), 4);
  EXPECT_EQ(mesh.dim_index("model"), 1);
  EXPECT_TRUE(mesh.contains_dim("batch"));
  EXPECT_FALSE(mesh.contains_dim("x"));
  EXPECT_EQ(mesh.num_local_devices(), 8);
  EXPECT_EQ(mesh.local_devices()[3], cpu(3));
  EXPECT_EQ(mesh.local_device_ids(), mesh.global_device_ids());
  EXPECT_TRUE(mesh.global_devices().empty());
  // The last dimension varies fastest.
  EXPECT_EQ(mesh.device_location(6), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(mesh.device_location(3), (std::vector<int64_t>{0, 3}));
  for (int64_t id = 0; id < mesh.size(); ++id) {
    EXPECT_EQ(mesh.device_id(mesh.device_location(id)), id);
  }
  const auto locations = mesh.local_device_locations();
  ASSERT_EQ(locations.size(), 8u);
  EXPECT_EQ(locations[6], (std::map<std::string, int64_t>{{"batch", 1}, {"model", 2}}));
  EXPECT_THAT([&] { mesh.device_location(8); },
              ThrowsMessage<InvalidArgument>(HasSubstr("device 8 is outside the mesh's 8")));
  EXPECT_THAT(
      [&] {
        mesh.device_id({2, 0});
      },
      ThrowsMessage<InvalidArgument>(
          HasSubstr("coordinate 2 is outside dimension \"batch\" of size 2")));
  EXPECT_THAT([&] { mesh.dim_size("x"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("(its dimensions: batch, model)")));

  // Devices by any of TensorFlow's spellings, in the order given.
  Mesh some = create_mesh({{"x", 2}}, {"CPU:5", "/cpu:1"});
  EXPECT_EQ(some.local_devices(), (std::vector<std::string>{cpu(5), cpu(1)}));
  EXPECT_EQ(some.local_device_ids(), (std::vector<int64_t>{0, 1}));
}

TEST_F(DTensor, AMeshWritesAndReadsTensorFlowsStringForm) {
  Mesh mesh = create_mesh({{"batch", 2}, {"model", 2}}, {"CPU:0", "CPU:1", "CPU:2", "CPU:3"});
  const std::string text =
      "|batch=2,model=2|0,1,2,3|0,1,2,3|" + cpu(0) + "," + cpu(1) + "," + cpu(2) + "," + cpu(3);
  EXPECT_EQ(mesh.to_string(), text);
  EXPECT_EQ(Mesh::from_string(text), mesh);
  EXPECT_EQ(Mesh::from_string(text).to_string(), text);
  EXPECT_NE(create_mesh({{"batch", 4}}, {"CPU:0", "CPU:1", "CPU:2", "CPU:3"}), mesh);
  EXPECT_TRUE(Mesh::from_string("empty_mesh").is_empty());
  EXPECT_EQ(Mesh().to_string(), "empty_mesh");
  EXPECT_EQ(Mesh().size(), 0);

  // One client's view of a mesh across two processes: it holds devices 4-7, and every device's
  // name is given.
  std::vector<std::string> global, local;
  for (int task = 0; task < 2; ++task) {
    for (int i = 0; i < 4; ++i) {
      global.push_back("/job:worker/replica:0/task:" + std::to_string(task) +
                       "/device:CPU:" + std::to_string(i));
    }
  }
  local.assign(global.begin() + 4, global.end());
  Mesh distributed({{"batch", 2}, {"model", 4}}, {4, 5, 6, 7}, local, "", global);
  EXPECT_EQ(distributed.num_local_devices(), 4);
  EXPECT_EQ(Mesh::from_string(distributed.to_string()), distributed);
  EXPECT_THAT(distributed.to_string(), HasSubstr("|4,5,6,7|/job:worker/replica:0/task:1/"));

  for (const std::string& bad :
       {std::string("|batch=2|0,1|0,1"), std::string("|batch|0,1|0,1|a,b"),
        std::string("|batch=two|0,1|0,1|a,b"), std::string("|batch=2|1,0|0,1|a,b")}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(Mesh::from_string(bad), InvalidArgument);
  }
  EXPECT_THAT([] { Mesh::from_string("|batch=two|0,1|0,1|a,b"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("\"two\" is not an integer")));
}

TEST_F(DTensor, ABadMeshIsRefusedNamingWhatIsWrong) {
  auto refused = [](const std::vector<MeshDimension>& dims, std::vector<int64_t> ids,
                    std::vector<std::string> devices, const std::string& why) {
    SCOPED_TRACE(why);
    EXPECT_THAT([&] { Mesh(dims, ids, devices); }, ThrowsMessage<InvalidArgument>(HasSubstr(why)));
  };
  refused({}, {0}, {"a"}, "a mesh needs at least one dimension");
  refused({{"x", 2}, {"x", 1}}, {0, 1}, {"a", "b"}, "dimension \"x\" is named twice");
  refused({{"unsharded", 2}}, {0, 1}, {"a", "b"}, "\"unsharded\" is reserved");
  refused({{"a=b", 2}}, {0, 1}, {"a", "b"}, "\"a=b\" is empty or holds one of");
  refused({{"x", 0}}, {}, {}, "dimension \"x\" has size 0");
  refused({{"x", 2}}, {0, 2}, {"a", "b"}, "local device id 2 is outside the mesh's 2 devices");
  refused({{"x", 2}}, {1, 1}, {"a", "b"}, "local device id 1 is given twice");
  refused({{"x", 2}}, {0, 1}, {"a", "a"}, "local device \"a\" is given twice");
  refused({{"x", 2}}, {0}, {"a", "b"}, "1 local device ids for 2 local devices");
  refused({{"x", 3}}, {0, 1}, {"a", "b"}, "2 local devices do not divide the mesh's 3 devices");

  EXPECT_THAT(
      [] {
        create_mesh({{"batch", 4}});
      },
      ThrowsMessage<InvalidArgument>(
          HasSubstr("create_mesh: the mesh batch=4 has 4 devices, but 8 devices are there")));
  EXPECT_THAT(
      [] {
        create_mesh({{"batch", 2}}, {"CPU:1", "CPU:9"});
      },
      ThrowsMessage<InvalidArgument>(
          HasSubstr("create_mesh: device \"CPU:9\" does not exist: there are 8 logical CPU")));
  EXPECT_THAT(
      [] {
        create_mesh({{"batch", 2}}, {"CPU:1", "/cpu:1"});
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("device \"/cpu:1\" is given twice")));
}

TEST_F(DTensor, ALayoutShardsAxesOverMeshDimensionsAndIsReplicatedOverTheRest) {
  Mesh mesh = create_mesh({{"batch", 2}, {"model", 4}});
  Layout kernel({kUnsharded, "model"}, mesh);
  EXPECT_EQ(kernel.rank(), 2);
  EXPECT_EQ(kernel.num_shards(), (std::vector<int64_t>{1, 4}));
  EXPECT_FALSE(kernel.is_fully_replicated());
  EXPECT_EQ(kernel.local_shape({784, 512}), (Shape{784, 128}));
  EXPECT_EQ(kernel.global_shape({784, 128}), (Shape{784, 512}));
  // The tutorial's bias layout: the kernel's without its first axis.
  EXPECT_EQ(kernel.delete_axes({0}), Layout({"model"}, mesh));
  EXPECT_EQ(kernel.delete_axes({-1}), Layout::replicated(mesh, 1));
  EXPECT_EQ(Layout::batch_sharded(mesh, "batch", 3),
            Layout({"batch", kUnsharded, kUnsharded}, mesh));
  EXPECT_EQ(Layout::batch_sharded(mesh, "batch", 3, 1),
            Layout({kUnsharded, "batch", kUnsharded}, mesh));
  EXPECT_EQ(Layout::inner_sharded(mesh, "model", 2), kernel);
  EXPECT_TRUE(Layout::replicated(mesh, 2).is_fully_replicated());
  EXPECT_EQ(Layout::replicated(mesh, 2).local_shape({3, 5}), (Shape{3, 5}));

  // Where each device's block starts: the kernel's 4 column blocks each lie on both devices of a
  // column of the mesh (it is replicated over "batch").
  Layout both({"batch", "model"}, mesh);
  EXPECT_EQ(both.offsets({4, 8}, 6), (std::vector<int64_t>{2, 4}));  // batch 1, model 2
  std::map<std::vector<int64_t>, int> holders;
  for (int64_t id = 0; id < mesh.size(); ++id) ++holders[kernel.offsets({784, 512}, id)];
  EXPECT_EQ(holders.size(), 4u);
  for (const auto& [offsets, n] : holders) {
    EXPECT_EQ(offsets[0], 0);
    EXPECT_EQ(offsets[1] % 128, 0);
    EXPECT_EQ(n, 2) << "each column block on both rows of the mesh";
  }
}

TEST_F(DTensor, ALayoutWritesAndReadsTensorFlowsStringForm) {
  Mesh mesh = create_mesh({{"batch", 2}, {"model", 4}});
  Layout kernel({kUnsharded, "model"}, mesh);
  EXPECT_EQ(kernel.to_string(), "sharding_specs:unsharded,model, mesh:" + mesh.to_string());
  EXPECT_EQ(Layout::from_string(kernel.to_string()), kernel);
  Layout scalar({}, mesh);
  EXPECT_EQ(scalar.to_string(), "sharding_specs: mesh:" + mesh.to_string());
  EXPECT_EQ(Layout::from_string(scalar.to_string()), scalar);
  EXPECT_EQ(Layout().to_string(), "empty_layout");
  EXPECT_TRUE(Layout::from_string("empty_layout").is_empty());
  for (const std::string& bad : {std::string("sharding_specs:model mesh:") + mesh.to_string(),
                                 std::string("sharding_specs:model,") + mesh.to_string(),
                                 std::string("sharding_specs:,, mesh:") + mesh.to_string(),
                                 std::string("sharding_specs:x, mesh:") + mesh.to_string()}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(Layout::from_string(bad), InvalidArgument);
  }
}

TEST_F(DTensor, ABadLayoutOrAShapeItCannotCutIsRefusedNamingBoth) {
  Mesh mesh = create_mesh({{"batch", 2}, {"model", 4}});
  EXPECT_THAT(
      [&] {
        Layout({"x", kUnsharded}, mesh);
      },
      ThrowsMessage<InvalidArgument>(
          HasSubstr("sharding spec \"x\" is neither a dimension of mesh |batch=2,model=4")));
  EXPECT_THAT(
      [&] {
        Layout({"model", "model"}, mesh);
      },
      ThrowsMessage<InvalidArgument>(
          HasSubstr("mesh dimension \"model\" shards two axes of sharding specs [model, model]")));
  EXPECT_THAT([&] { Layout({kUnsharded}, Mesh()); },
              ThrowsMessage<InvalidArgument>(HasSubstr("the mesh is empty")));
  Layout kernel({kUnsharded, "model"}, mesh);
  EXPECT_THAT(
      [&] {
        kernel.local_shape({784, 510});
      },
      ThrowsMessage<InvalidArgument>(
          HasSubstr("axis 1 of shape (784, 510) has size 510, which mesh dimension \"model\" of "
                    "size 4 does not divide (layout sharding_specs:unsharded,model, mesh:")));
  EXPECT_THAT([&] { kernel.local_shape({784}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("shape (784) has rank 1")));
  // "match" is relayout's: it has no number of shards.
  Layout match({kMatch, "model"}, mesh);
  EXPECT_THAT([&] { match.num_shards(0); },
              ThrowsMessage<InvalidArgument>(HasSubstr("which only relayout takes")));
  EXPECT_THAT(
      [&] {
        kernel.delete_axes({0, -2});
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("axis -2 is given twice")));
  EXPECT_THAT([&] { Layout::batch_sharded(mesh, "batch", 2, 2); },
              ThrowsMessage<InvalidArgument>(HasSubstr("axis 2 is outside rank 2")));
}

}  // namespace
}  // namespace weft::dtensor
