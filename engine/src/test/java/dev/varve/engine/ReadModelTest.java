package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.core.tree.BPlusTree;
import dev.varve.engine.ReadModel.TableModel;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Everything a caller reads, against a model (a TreeMap per partition, per table, per snapshot), over a random
 * workload with fixed seeds: binary keys of 0x00/0x7F/0x80/0xFF bytes from empty to the maximum size, values empty,
 * up to 8 bytes, either side of the inline/overflow boundary, over a page and at 1 MiB; puts, removes and batches
 * through tables, partitions and {@code write}, {@code writeAndSnapshot}, {@code snapshotNow}, checkpoints, partition
 * destroys, tables created late, and reopens after a close or a crash. The live store, every snapshot view and, at
 * the end, a read-only open (live and every snapshot; of a crashed store for odd seeds) and a writable reopen must
 * each read exactly as the model says.
 */
@Timeout(300)
class ReadModelTest {
    static final int PAGE = 1024;
    @TempDir
    Path dir;

    /** A store per seed (the long sweep runs many in one test); one seed in three recovers by WAL_PHYSICAL. */
    VarveConfig config(long seed) {
        return config(seed, 3);
    }

    /** {@code partitions}: what a table created on first use gets; the existing tables keep theirs. */
    VarveConfig config(long seed, int partitions) {
        return VarveConfig.builder().path(dir.resolve("seed-" + seed)).pageSize(PAGE).dataRegionSize(32L << 20).partitions(partitions)
                .walSyncMode(WalSyncMode.LOG_ONLY).checkpointFrequency(Duration.ofMillis(200)).checkpointBufferSize(1L << 20)
                .captureBufferSize(1L << 20).skippyNodeEntries(16).archiveSegmentSize(256L << 10)
                .recoveryMode(seed % 3 == 0 ? RecoveryMode.WAL_PHYSICAL : RecoveryMode.CHECKPOINT_RECOVERY_FILE) // both recoveries
                .retention(RankTreePolicy.levels(Retention.keepAll())).walSegmentSize(4L << 20).build();
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3})
    void readsMatchTheModel(long seed) {
        new Run(seed, 700).run();
    }

    @Tag("long")
    @Test
    void readsMatchTheModelLong() {
        for (long seed = 100; seed < 112; seed++) new Run(seed, 2000).run();
    }

    /** A table a batch creates is in the snapshot {@code writeAndSnapshot} declares, before and after a crash. */
    @Test
    void aTableCreatedByTheSnapshotsOwnBatchIsInIt() {
        byte[] k = {0, (byte) 0xFF}, v = new byte[3000];
        long s1, s2;
        Varve store = Varve.open(config(0), UnforcedFileIOFactory.INSTANCE);
        try {
            s1 = store.writeAndSnapshot(b -> b.put("fresh", k, v).put("fresh", new byte[0], new byte[0]));
            s2 = store.writeAndSnapshot(b -> b.remove("fresh", k).put("later", k, v), 1);
            for (int round = 0; round < 2; round++) {
                try (SnapshotView a = store.asOf(s1); SnapshotView b = store.asOf(s2)) {
                    assertEquals(List.of("fresh"), a.tables());
                    assertArrayEquals(v, a.table("fresh").get(k));
                    assertArrayEquals(new byte[0], a.table("fresh").get(new byte[0]));
                    assertNull(a.table("later").options());
                    assertEquals(List.of("fresh", "later"), b.tables());
                    assertNull(b.table("fresh").get(k));
                    assertArrayEquals(v, b.table("later").get(k));
                }
                store.halt();
                store = Varve.open(config(0), UnforcedFileIOFactory.INSTANCE);
            }
        } finally {
            store.close();
        }
    }

    final class Run {
        final long seed;
        final int steps;
        final Random r;
        final List<byte[]> keys = new ArrayList<>();
        final Map<String, TableModel> cur = new TreeMap<>();
        final Map<Long, Map<String, TableModel>> snaps = new TreeMap<>();
        final int maxKey = BPlusTree.maxKeyBytes(PAGE);
        final int maxInline = BPlusTree.maxInlineBytes(PAGE);
        Varve store;
        int hugeValues;
        /** The configured partition count of the current open, which a table a batch creates gets. */
        int defaultParts;

        /** Opens the store with a partition count for new tables that changes from one open to the next. */
        Varve open() {
            defaultParts = 1 + r.nextInt(4);
            return Varve.open(config(seed, defaultParts), UnforcedFileIOFactory.INSTANCE);
        }

        Run(long seed, int steps) {
            this.seed = seed;
            this.steps = steps;
            this.r = new Random(seed);
            TreeSet<byte[]> pool = new TreeSet<>(ReadModel.ORDER);
            byte[] alphabet = {0x00, 0x01, 0x7F, (byte) 0x80, (byte) 0xFE, (byte) 0xFF};
            pool.add(new byte[0]);
            while (pool.size() < 90) {
                int len = r.nextInt(10) == 0 ? 8 + r.nextInt(12) : r.nextInt(6);
                byte[] k = new byte[len];
                for (int i = 0; i < len; i++) k[i] = alphabet[r.nextInt(alphabet.length)];
                pool.add(k);
            }
            for (int i = 0; i < 6; i++) { // longest keys, sharing their first 8 bytes or more
                byte[] k = new byte[maxKey - (i % 2)];
                java.util.Arrays.fill(k, (byte) 0xFF);
                k[k.length - 1 - i] = alphabet[r.nextInt(alphabet.length)];
                pool.add(k);
            }
            keys.addAll(pool);
        }

        String what(int step, String op) {
            return "seed " + seed + " step " + step + " " + op;
        }

        byte[] key() {
            return keys.get(r.nextInt(keys.size()));
        }

        byte[] value(byte[] key) {
            int c = r.nextInt(100), len;
            if (c < 8) len = 0;
            else if (c < 20) len = 1 + r.nextInt(8);
            else if (c < 45) len = Math.max(0, maxInline - key.length - 2 + r.nextInt(5)); // either side of inline
            else if (c < 85) len = 10 + r.nextInt(100);
            else if (c < 99 || hugeValues >= 2) len = PAGE + r.nextInt(6 * PAGE);
            else {
                hugeValues++;
                len = Varve.MAX_VALUE_BYTES - r.nextInt(2);
            }
            byte[] v = new byte[len];
            r.nextBytes(v);
            return v;
        }

        Table live(String name) {
            return store.table(name, cur.get(name).options);
        }

        String table() {
            List<String> names = new ArrayList<>(cur.keySet());
            return names.get(r.nextInt(names.size()));
        }

        void create(String name, TableOptions options) {
            store.table(name, options);
            cur.put(name, new TableModel(options));
        }

        void run() {
            store = open();
            try {
                create("h", TableOptions.hashPlaced(3));
                create("c", TableOptions.callerPlaced(4));
                for (int step = 0; step < steps; step++) step(step);
                checkLive("end");
                for (long s : snaps.keySet()) checkSnapshot(store, s, "end");
                if (seed % 2 == 1) store.halt(); // a crash: the read-only open recovers it in memory
                else store.close();
                try (Varve ro = Varve.openReadOnly(config(seed, defaultParts))) {
                    store = ro;
                    checkLive("read-only open");
                    for (long s : snaps.keySet()) checkSnapshot(ro, s, "read-only open");
                }
                store = open();
                checkLive("reopen");
            } finally {
                store.close();
            }
        }

        void step(int step) {
            int c = r.nextInt(100);
            if (c < 30) put(step);
            else if (c < 42) remove(step);
            else if (c < 55) {
                String name = table();
                ReadModel.check(live(name), cur.get(name), sample(6), r, what(step, "live " + name));
            } else if (c < 65) batch(step, false);
            else if (c < 70) batch(step, true);
            else if (c < 74) snaps.put(store.snapshotNow(), ReadModel.copy(cur));
            else if (c < 76) store.checkpoint().join();
            else if (c < 78) destroy();
            else if (c < 80) create("t" + step, r.nextBoolean() ? TableOptions.hashPlaced(1 + r.nextInt(3)) : TableOptions.callerPlaced(1 + r.nextInt(3)));
            else if (c < 90 && !snaps.isEmpty()) {
                List<Long> ids = new ArrayList<>(snaps.keySet());
                checkSnapshot(store, ids.get(r.nextInt(ids.size())), what(step, "view"));
            } else if (c < 91) {
                if (r.nextBoolean()) store.halt(); // LOG_ONLY: every write that returned is in the WAL the crash leaves
                else store.close();
                store = open();
            } else refusals(step);
        }

        List<byte[]> sample(int n) {
            List<byte[]> s = new ArrayList<>();
            for (int i = 0; i < n; i++) s.add(key());
            return s;
        }

        void put(int step) {
            String name = table();
            TableModel m = cur.get(name);
            byte[] k = key(), v = value(k);
            int p = m.partitionOf(k, r.nextInt(m.parts.size()));
            if (m.options.callerPlaced() || r.nextBoolean()) live(name).partition(p).put(k, v);
            else live(name).put(k, v);
            m.parts.get(p).put(k, v);
        }

        void remove(int step) {
            String name = table();
            TableModel m = cur.get(name);
            byte[] k = r.nextBoolean() ? key() : anyPresentKey(m);
            if (k == null) return;
            int p = m.partitionOf(k, r.nextInt(m.parts.size()));
            boolean expected = m.parts.get(p).remove(k) != null;
            boolean removed = m.options.callerPlaced() || r.nextBoolean() ? live(name).partition(p).remove(k) : live(name).remove(k);
            assertEquals(expected, removed, what(step, "remove " + ReadModel.hex(k) + " from " + name));
        }

        byte[] anyPresentKey(TableModel m) {
            for (var part : m.parts) if (!part.isEmpty()) return part.firstKey();
            return null;
        }

        /** A batch over several tables, the same key more than once: later operations win, as they would one by one. */
        void batch(int step, boolean snapshot) {
            List<Runnable> model = new ArrayList<>();
            List<java.util.function.Consumer<WriteBatch>> ops = new ArrayList<>();
            int n = r.nextInt(6);
            if (r.nextInt(8) == 0) { // a table created by the batch, hash-placed with the configured partition count
                String name = "b" + step;
                byte[] k = key(), v = value(k);
                TableModel m = new TableModel(TableOptions.hashPlaced(defaultParts));
                ops.add(b -> b.put(name, k, v));
                model.add(() -> cur.computeIfAbsent(name, x -> m).parts.get(KeyHash.partition(k, defaultParts)).put(k, v));
            }
            for (int i = 0; i < n; i++) {
                String name = table();
                TableModel m = cur.get(name);
                byte[] k = r.nextInt(3) == 0 && !ops.isEmpty() ? keys.get(0) : key();
                int p = m.partitionOf(k, r.nextInt(m.parts.size()));
                boolean named = m.options.callerPlaced() || r.nextBoolean();
                if (r.nextInt(3) == 0) {
                    ops.add(named ? b -> b.remove(name, p, k) : b -> b.remove(name, k));
                    model.add(() -> m.parts.get(p).remove(k));
                } else {
                    byte[] v = r.nextInt(4) == 0 ? new byte[r.nextInt(3 * PAGE)] : value(k);
                    ops.add(named ? b -> b.put(name, p, k, v) : b -> b.put(name, k, v));
                    model.add(() -> m.parts.get(p).put(k, v));
                }
            }
            java.util.function.Consumer<WriteBatch> all = b -> ops.forEach(o -> o.accept(b));
            if (snapshot) {
                long id = store.writeAndSnapshot(all);
                model.forEach(Runnable::run);
                assertNull(snaps.put(id, ReadModel.copy(cur)), what(step, "writeAndSnapshot returned a used id " + id));
            } else {
                store.write(all);
                model.forEach(Runnable::run);
            }
        }

        void destroy() {
            String name = table();
            TableModel m = cur.get(name);
            int p = r.nextInt(m.parts.size());
            live(name).partition(p).destroy();
            m.parts.get(p).clear();
        }

        /** Bad reads fail with IllegalArgumentException naming the problem, and change nothing. */
        void refusals(int step) {
            byte[] tooLong = new byte[maxKey + 1];
            Table h = live("h");
            assertTrue(assertThrows(IllegalArgumentException.class, () -> h.get(tooLong)).getMessage().contains("exceeds the maximum"));
            assertThrows(IllegalArgumentException.class, () -> h.get(null));
            assertThrows(IllegalArgumentException.class, () -> h.put(tooLong, new byte[1]));
            assertThrows(IllegalArgumentException.class, () -> h.put(keys.get(0), new byte[Varve.MAX_VALUE_BYTES + 1]));
            assertThrows(IllegalArgumentException.class, () -> live("c").get(keys.get(0)));
            assertThrows(IllegalArgumentException.class, () -> h.partition(3));
            byte[] k = key();
            int wrong = (KeyHash.partition(k, 3) + 1) % 3;
            assertThrows(IllegalArgumentException.class, () -> h.partition(wrong).get(k));
            long latest = snaps.isEmpty() ? 0 : ((TreeMap<Long, ?>) snaps).lastKey();
            for (long id : new long[]{0, -1, Long.MIN_VALUE, latest + 1, Long.MAX_VALUE})
                assertTrue(assertThrows(SnapshotNotFoundException.class, () -> store.asOf(id).close()).getMessage().contains("never declared"));
            if (!snaps.isEmpty()) {
                try (SnapshotView v = store.asOf(snaps.keySet().iterator().next())) {
                    Table vh = v.table("h");
                    assertThrows(IllegalArgumentException.class, () -> vh.get(tooLong));
                    assertThrows(IllegalArgumentException.class, () -> vh.partition(wrong).get(k));
                    assertThrows(IllegalArgumentException.class, () -> v.table("c").get(k));
                    assertThrows(UnsupportedOperationException.class, () -> vh.put(k, new byte[1]));
                    assertThrows(UnsupportedOperationException.class, () -> vh.partition(0).destroy());
                }
            }
            ReadModel.check(h, cur.get("h"), sample(3), r, what(step, "after refusals"));
        }

        void checkLive(String what) {
            assertEquals(new ArrayList<>(cur.keySet()), store.tables(), what + ": tables");
            for (var e : cur.entrySet())
                ReadModel.check(store.isReadOnly() ? store.table(e.getKey()) : live(e.getKey()), e.getValue(), keys, r, "seed " + seed + " " + what + " live " + e.getKey());
        }

        void checkSnapshot(Varve on, long id, String what) {
            Map<String, TableModel> m = snaps.get(id);
            try (SnapshotView v = on.asOf(id)) {
                assertEquals(id, v.id());
                String w = "seed " + seed + " " + what + " snapshot " + id;
                assertEquals(new ArrayList<>(m.keySet()), v.tables(), w + ": tables");
                for (String name : cur.keySet()) ReadModel.check(v.table(name), m.get(name), sample(12), r, w + " " + name);
                ReadModel.check(v.table("never"), null, sample(2), r, w + " never");
            }
        }
    }
}
