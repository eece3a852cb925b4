// The CRI runtime contract against the in-memory runtime; test/integration/cri/runtime-contract.test.ts runs it against containerd.
import { contractImages, runtimeContract } from '../../contract/runtime-contract.js';
import { InMemoryRuntime } from '../fakes/in-memory-runtime.js';

runtimeContract(() => {
  const fake = new InMemoryRuntime({ images: [contractImages.pause, contractImages.busybox] });
  return {
    runtime: fake,
    exitContainer: async (id, exitCode) => fake.exitContainer(id, exitCode),
  };
});
