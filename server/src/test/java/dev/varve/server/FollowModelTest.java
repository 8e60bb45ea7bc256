package dev.varve.server;

import dev.varve.config.ConfigLimits;
import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.engine.Cursor;
import dev.varve.engine.SnapshotInfo;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Table;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;
import dev.varve.engine.WriteBatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Follow mode against a model: every kind of change the sender makes (batches, writeAndSnapshot, removes, destroyed
 * partitions, new tables of both placements with unicode names, binary keys, empty values, rank raises, drops by the
 * sender's own policy, checkpoints), and the standby compared with the model at every sender snapshot it maps.
 */
@Timeout(240)
class FollowModelTest {
    private static final InetSocketAddress LOOPBACK = new InetSocketAddress("127.0.0.1", 0);

    @TempDir
    Path dir;

    /** Table → hex key → value. */
    private final Map<String, TreeMap<String, byte[]>> model = new TreeMap<>();
    private final Map<Long, Map<String, TreeMap<String, byte[]>>> atSnapshot = new TreeMap<>();
    private final Random rnd = new Random(42);

    @Test
    void theStandbyEqualsTheSenderAtEveryMappedSnapshot() throws Exception {
        Path target = dir.resolve("standby");
        RankTreePolicy standbyPolicy = RankTreePolicy.levels(Retention.keepAll(), Retention.keepAll());
        try (Varve store = Varve.open(SmallStore.fresh(dir.resolve("source")).recoveryMode(RecoveryMode.WAL_PHYSICAL)
                .dataRegionSize(64L << 20).retention(RankTreePolicy.levels(Retention.keepLast(2), Retention.keepLast(2), Retention.keepAll())).build());
             VarveServer server = VarveServer.start(store, LOOPBACK, new ServerOptions().allowWrites(true))) {
            create(store, "plain", null);
            create(store, "placé✓", TableOptions.callerPlaced(4));
            for (int i = 0; i < 200; i++) step(store);
            FollowedSnapshots held = new FollowedSnapshots();
            SnapshotBackup follow = new SnapshotBackup(server.address(), 1, target).follow(true).retention(standbyPolicy).progress(held);
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (store.snapshots().isEmpty() && System.nanoTime() < deadline) Thread.sleep(5);
            long image = store.snapshots().get(store.snapshots().size() - 1).id();
            atSnapshot.put(image, copy());
            long last = image;
            for (int i = 0; i < 3000; i++) {
                int dice = rnd.nextInt(1000);
                if (dice < 15) {
                    last = store.snapshotNow(1 + rnd.nextInt(3));
                    atSnapshot.put(last, copy());
                } else if (dice < 25) {
                    List<byte[][]> ops = batchOps(store);
                    last = store.writeAndSnapshot(b -> apply(b, ops), 1 + rnd.nextInt(3));
                    atSnapshot.put(last, copy());
                } else if (dice < 30) {
                    List<SnapshotInfo> live = store.snapshots();
                    SnapshotInfo s = live.get(rnd.nextInt(live.size()));
                    if (s.rank() < 3) store.rank(s.id(), s.rank() + 1);
                } else if (dice < 32) {
                    destroy(store, rnd.nextBoolean() ? "plain" : "placé✓", rnd.nextInt(4));
                } else if (dice < 34) {
                    store.checkpoint();
                } else if (dice == 34) {
                    create(store, "t" + i + "-ü", rnd.nextBoolean() ? TableOptions.callerPlaced(2) : null);
                } else {
                    step(store);
                }
            }
            last = store.snapshotNow();
            atSnapshot.put(last, copy());
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (held.latest() < last && System.nanoTime() < deadline) Thread.sleep(20);
            assertEquals(last, held.latest());
            follow.stop();
            run.get(60, TimeUnit.SECONDS);
        }
        Map<Long, Long> map = Standby.snapshots(target);
        assertEquals(atSnapshot.keySet(), map.keySet(), "one line per sender snapshot since the image");
        try (Varve standby = Varve.open(SmallStore.config(target).retention(standbyPolicy).build())) {
            for (Map.Entry<Long, Map<String, TreeMap<String, byte[]>>> m : atSnapshot.entrySet()) {
                try (SnapshotView v = standby.asOf(map.get(m.getKey()))) {
                    assertHolds(m.getValue(), v.tables(), v::table, "sender snapshot " + m.getKey());
                }
            }
            assertHolds(model, standby.tables(), standby::table, "latest");
        }
    }

    /**
     * A batch the sender takes, too large in head-room for the default data region: the standby, opened with one at
     * least as large as the sender's, applies it (it refused it with "more than half the data region" and the follow
     * ended, with no way to give the standby a larger region).
     */
    @Test
    void aBatchTheSenderTakesIsAppliedByTheStandby() throws Exception {
        Path target = dir.resolve("standby");
        int ops = 2400; // 16 pages of head-room each: over half the default 256 MiB region, under half of 320 MiB
        long last = followOneBatch(SmallStore.fresh(dir.resolve("source")).dataRegionSize(320L << 20).build(),
                new ServerOptions().allowWrites(true), target, b -> {
                    for (int i = 0; i < ops; i++) b.put("t", key(i), new byte[8]);
                });
        try (Varve standby = Varve.open(VarveConfig.builder().path(target).build());
             SnapshotView v = standby.asOf(Standby.localSnapshot(target, last).orElseThrow())) {
            for (int i = 0; i < ops; i++) assertArrayEquals(new byte[8], v.table("t").get(key(i)), "key " + i);
        }
    }

    /**
     * A batch the sender takes whose WAL record is over the record limit of a default segment (a little under 64 MiB),
     * its segments and follow buffer being larger: the standby, whose WAL takes segments as large as the sender's,
     * applies it and then equals the sender (its segments were of the default size whatever the sender's, so it
     * refused the batch with "exceeds the WAL record limit" and the follow ended).
     */
    @Test
    void aBatchOverTheDefaultSegmentsRecordLimitIsAppliedByTheStandby() throws Exception {
        Path target = dir.resolve("standby");
        int valueBytes = Varve.MAX_VALUE_BYTES; // the largest: few of them, each in overflow pages
        // the values alone fill a default segment, whose record limit is below its size: the batch is over it by its
        // keys and the record's headers, and no more
        int values = (int) (ConfigLimits.WAL_SEGMENT_SIZE_DEFAULT / valueBytes);
        long segment = ConfigLimits.WAL_SEGMENT_SIZE_DEFAULT + (1 << 20);
        VarveConfig sender = VarveConfig.builder().path(dir.resolve("source")).walSegmentSize(segment)
                .dataRegionSize(160L << 20) // the batch's head-room, some 70 MiB of pages, fits half of it
                .checkpointBufferSize(ConfigLimits.CHECKPOINT_BUFFER_SIZE_MIN).captureBufferSize(ConfigLimits.CAPTURE_BUFFER_SIZE_MIN).build();
        long last = followOneBatch(sender, new ServerOptions().allowWrites(true).followBufferBytes(96L << 20), target, b -> {
            for (int i = 0; i < values; i++) b.put("t", key(i), bigValue(i, valueBytes));
        });
        // the standby opens only with the segment size its WAL was made with: the sender's
        try (Varve source = Varve.open(sender);
             Varve standby = Varve.open(SmallStore.config(target).walSegmentSize(segment).build());
             SnapshotView v = standby.asOf(Standby.localSnapshot(target, last).orElseThrow())) {
            assertEquals(values, StoreAssert.assertStoresEqual(source.tables(), source::table, standby.tables(), standby::table, "the standby"));
            assertEquals(values, StoreAssert.assertStoresEqual(source.tables(), source::table, v.tables(), v::table, "the standby as of the batch"));
        }
    }

    /**
     * Starts a follow of a new store of {@code senderConfig} served with {@code options} into {@code target}, has the
     * store take {@code batch} into its table "t" with a snapshot, and stops the follow once the standby holds that
     * snapshot; returns its id. The standby must have applied the batch as one write.
     */
    private static long followOneBatch(VarveConfig senderConfig, ServerOptions options, Path target, Consumer<WriteBatch> batch) throws Exception {
        try (Varve store = Varve.open(senderConfig);
             VarveServer server = VarveServer.start(store, LOOPBACK, options)) {
            store.table("t");
            FollowedSnapshots held = new FollowedSnapshots();
            SnapshotBackup follow = new SnapshotBackup(server.address(), 1, target).follow(true).progress(held);
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (store.snapshots().isEmpty() && System.nanoTime() < deadline) Thread.sleep(5);
            long last = store.writeAndSnapshot(batch);
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (held.latest() < last && !run.isDone() && System.nanoTime() < deadline) Thread.sleep(20);
            follow.stop();
            assertEquals(1, run.get(60, TimeUnit.SECONDS).writesFollowed(), "the batch was applied, as one write");
            return last;
        }
    }

    /** A value of {@code bytes} bytes, its own for each {@code i}. */
    private static byte[] bigValue(int i, int bytes) {
        byte[] v = new byte[bytes];
        new Random(i).nextBytes(v);
        return v;
    }

    private static byte[] key(int i) {
        return ("k" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    private void create(Varve store, String name, TableOptions options) {
        if (options == null) store.table(name);
        else store.table(name, options);
        model.put(name, new TreeMap<>());
    }

    private byte[] key() {
        byte[] k = new byte[1 + rnd.nextInt(6)];
        for (int i = 0; i < k.length; i++) k[i] = (byte) rnd.nextInt(6); // binary, few enough to overwrite
        k[0] = (byte) (k[0] | 0x80 * rnd.nextInt(2));
        return k;
    }

    private byte[] value() {
        int size = rnd.nextInt(10) == 0 ? 0 : rnd.nextInt(10) == 0 ? 5000 + rnd.nextInt(5000) : rnd.nextInt(200);
        byte[] v = new byte[size];
        rnd.nextBytes(v);
        return v;
    }

    private String anyTable() {
        List<String> names = new ArrayList<>(model.keySet());
        return names.get(rnd.nextInt(names.size()));
    }

    /** {table, key, value-or-null, partition} as bytes. */
    private List<byte[][]> batchOps(Varve store) {
        List<byte[][]> ops = new ArrayList<>();
        int n = 1 + rnd.nextInt(5);
        for (int i = 0; i < n; i++) {
            String t = anyTable();
            Table table = store.table(t);
            byte[] k = key();
            int p = table.options().callerPlaced() ? rnd.nextInt(table.partitions()) : -1;
            ops.add(new byte[][]{t.getBytes(java.nio.charset.StandardCharsets.UTF_8), k, rnd.nextInt(5) == 0 ? null : value(), {(byte) p}});
        }
        return ops;
    }

    private void apply(dev.varve.engine.WriteBatch b, List<byte[][]> ops) {
        for (byte[][] op : ops) {
            String t = new String(op[0], java.nio.charset.StandardCharsets.UTF_8);
            int p = op[3][0];
            String mk = (p < 0 ? "" : p + "/") + HexFormat.of().formatHex(op[1]);
            if (op[2] == null) {
                if (p < 0) b.remove(t, op[1]);
                else b.remove(t, p, op[1]);
                model.get(t).remove(mk);
            } else {
                if (p < 0) b.put(t, op[1], op[2]);
                else b.put(t, p, op[1], op[2]);
                model.get(t).put(mk, op[2]);
            }
        }
    }

    private void step(Varve store) {
        if (rnd.nextInt(3) == 0) {
            List<byte[][]> ops = batchOps(store);
            store.write(b -> apply(b, ops));
            return;
        }
        String t = anyTable();
        Table table = store.table(t);
        byte[] k = key();
        boolean placed = table.options().callerPlaced();
        int p = placed ? rnd.nextInt(table.partitions()) : -1;
        String mk = (p < 0 ? "" : p + "/") + HexFormat.of().formatHex(k);
        if (rnd.nextInt(6) == 0) {
            if (placed) table.partition(p).remove(k);
            else table.remove(k);
            model.get(t).remove(mk);
        } else {
            byte[] v = value();
            if (placed) table.partition(p).put(k, v);
            else table.put(k, v);
            model.get(t).put(mk, v);
        }
    }

    private void destroy(Varve store, String t, int p) {
        Table table = store.table(t);
        if (table.options().callerPlaced()) {
            model.get(t).keySet().removeIf(k -> k.startsWith(p + "/"));
        } else {
            try (Cursor c = table.partition(p).scan(null, null)) {
                while (c.next()) model.get(t).remove(HexFormat.of().formatHex(c.key()));
            }
        }
        table.partition(p).destroy();
    }

    private Map<String, TreeMap<String, byte[]>> copy() {
        Map<String, TreeMap<String, byte[]>> c = new TreeMap<>();
        model.forEach((t, m) -> c.put(t, new TreeMap<>(m)));
        return c;
    }

    private static void assertHolds(Map<String, TreeMap<String, byte[]>> expected, List<String> names, java.util.function.Function<String, Table> tables, String what) {
        assertEquals(new java.util.TreeSet<>(expected.keySet()), new java.util.TreeSet<>(names), what + ": tables");
        for (Map.Entry<String, TreeMap<String, byte[]>> t : expected.entrySet()) {
            Table table = tables.apply(t.getKey());
            TreeMap<String, byte[]> held = new TreeMap<>();
            for (int p = 0; p < table.partitions(); p++) {
                try (Cursor c = table.partition(p).scan(null, null)) {
                    while (c.next()) held.put((table.options().callerPlaced() ? p + "/" : "") + HexFormat.of().formatHex(c.key()), c.value());
                }
            }
            assertEquals(t.getValue().keySet(), held.keySet(), what + ": keys of " + t.getKey());
            for (Map.Entry<String, byte[]> e : t.getValue().entrySet()) assertArrayEquals(e.getValue(), held.get(e.getKey()), what + ": " + t.getKey() + "/" + e.getKey());
        }
    }
}
