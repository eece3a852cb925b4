// The host mount table as nodelet reads it: mountinfo parsing, mounts under a pod dir, the mount of a path.
import { isShared, mountOf, mountsUnder, parseMountInfo } from '../../../src/volume/mounter.js';

const mountinfo = `22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
42 27 254:0 /run/netns /run/netns rw,relatime shared:1 - ext4 /dev/vda rw
100 27 0:50 / /var/lib/nodelet/pods/u1/volumes/kubernetes.io~empty-dir/cache rw,relatime - tmpfs tmpfs rw,size=16384k,noswap
101 27 254:0 /srv/data /var/lib/nodelet/pods/u1/volume-subpaths/data/app/0 rw,relatime - ext4 /dev/vda rw
102 100 0:51 / /var/lib/nodelet/pods/u1/volumes/kubernetes.io~empty-dir/cache/inner rw shared:7 master:2 - tmpfs tmpfs rw
103 27 0:52 / /var/lib/nodelet/pods/u1/volumes/kubernetes.io~empty-dir/cache rw - tmpfs tmpfs rw
104 27 0:53 / /var/lib/nodelet/pods/u10/volumes/x rw - tmpfs tmpfs rw
105 27 0:54 / /mnt/with\\040space rw - tmpfs tmpfs rw
`;

test('parses fields, optional fields and octal escapes', () => {
  const mounts = parseMountInfo(mountinfo);
  expect(mounts).toHaveLength(9);
  expect(mounts[2]).toEqual({ id: 42, parentId: 27, mountPoint: '/run/netns', optional: ['shared:1'], fsType: 'ext4', source: '/dev/vda', superOptions: 'rw' });
  expect(mounts[5]!.optional).toEqual(['shared:7', 'master:2']);
  expect(mounts[3]!.superOptions).toBe('rw,size=16384k,noswap');
  expect(mounts[8]!.mountPoint).toBe('/mnt/with space');
  expect(isShared(mounts[2]!)).toBe(true);
  expect(isShared(mounts[1]!)).toBe(false);
});

test('mountsUnder: only that pod dir, deepest and most recently stacked first', () => {
  const under = mountsUnder(parseMountInfo(mountinfo), '/var/lib/nodelet/pods/u1').map((m) => m.id);
  expect(under).toEqual([102, 101, 103, 100]);
});

test('mountOf: the longest mount point prefix, the last stacked one winning', () => {
  const mounts = parseMountInfo(mountinfo);
  expect(mountOf(mounts, '/var/lib/nodelet/pods/u1/volumes/kubernetes.io~empty-dir/cache/x')!.id).toBe(103);
  expect(mountOf(mounts, '/run/netns/cni-1')!.id).toBe(42);
  expect(mountOf(mounts, '/etc/hosts')!.id).toBe(27);
});
