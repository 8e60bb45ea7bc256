package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.engine.Cursor;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Table;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Caller-placed tables (a data grid's: the caller names each key's partition) ship exactly: the backup and the
 * follow standby create them with the same placement and partition count and keep every key in the partition the
 * caller put it in, including one key held by several partitions with different values.
 */
class CallerPlacedShippingTest {
    private static final InetSocketAddress LOOPBACK = new InetSocketAddress("127.0.0.1", 0);
    private static final int PARTITIONS = 5;

    @TempDir
    Path dir;

    /** A seeded load on a caller-placed table, with its model: partition, then key, then value. */
    private static final class GridLoad {
        final String table;
        final Random rnd;
        final List<TreeMap<String, byte[]>> model = new ArrayList<>();

        GridLoad(String table, long seed) {
            this.table = table;
            this.rnd = new Random(seed);
            for (int p = 0; p < PARTITIONS; p++) model.add(new TreeMap<>());
        }

        /** Puts (some values over a page), removes, and the same key into several partitions. */
        void write(Varve store, int steps) {
            Table t = store.table(table, TableOptions.callerPlaced(PARTITIONS));
            for (int i = 0; i < steps; i++) {
                String key = "g" + rnd.nextInt(400); // a small key space: most keys land in several partitions
                int p = rnd.nextInt(PARTITIONS);
                byte[] k = key.getBytes(StandardCharsets.UTF_8);
                if (rnd.nextInt(10) == 0) {
                    t.partition(p).remove(k);
                    model.get(p).remove(key);
                } else {
                    byte[] v = new byte[rnd.nextInt(8) == 0 ? 5000 + rnd.nextInt(5000) : 10 + rnd.nextInt(200)];
                    rnd.nextBytes(v);
                    int partition = p;
                    store.write(b -> b.put(table, partition, k, v)); // batches name the partition too
                    model.get(p).put(key, v);
                }
            }
        }

        List<TreeMap<String, byte[]>> copy() {
            List<TreeMap<String, byte[]>> c = new ArrayList<>();
            for (TreeMap<String, byte[]> m : model) c.add(new TreeMap<>(m));
            return c;
        }
    }

    /** The table is caller-placed with the same partition count and holds exactly {@code model}, partition by partition. */
    private static void assertPartitionsEqual(List<TreeMap<String, byte[]>> model, Table t, String what) {
        assertEquals(TableOptions.callerPlaced(PARTITIONS), t.options(), what + ": options of " + t.name());
        int sharedKeys = 0;
        for (int p = 0; p < PARTITIONS; p++) {
            List<String> keys = new ArrayList<>();
            try (Cursor c = t.partition(p).scan(null, null)) {
                while (c.next()) {
                    String key = new String(c.key(), StandardCharsets.UTF_8);
                    keys.add(key);
                    assertTrue(Arrays.equals(model.get(p).get(key), c.value()), what + ": value of " + key + " in partition " + p);
                }
            }
            assertEquals(new ArrayList<>(model.get(p).keySet()), keys, what + ": keys of partition " + p + " of " + t.name());
            for (String k : keys) if (p > 0 && model.get(0).containsKey(k)) sharedKeys++;
        }
        assertTrue(sharedKeys > 0, what + ": the load put some key into partition 0 and another one");
    }

    @Test
    @Timeout(120)
    void backupKeepsEveryKeyInItsPartition() {
        GridLoad grid = new GridLoad("grid", 3);
        Workload hashed = new Workload(4, 300);
        Path target = dir.resolve("backup");
        List<TreeMap<String, byte[]>> model;
        Map<String, TreeMap<String, byte[]>> hashedModel;
        try (Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE));
             VarveServer server = VarveServer.start(store, LOOPBACK)) {
            hashed.createTables(store);
            grid.write(store, 3000);
            for (int i = 0; i < 300; i++) hashed.step(store);
            long id = store.snapshotNow();
            model = grid.copy();
            hashedModel = hashed.snapshot();
            grid.write(store, 500); // after the snapshot: not in the image
            BackupResult r = new SnapshotBackup(server.address(), id, target).run();
            assertEquals(4, r.tables());
        }
        try (Varve copy = Varve.open(SmallStore.config(target).build())) {
            assertPartitionsEqual(model, copy.table("grid"), "backup");
            List<String> names = new ArrayList<>(copy.tables());
            names.remove("grid");
            StoreAssert.assertTablesEqual(hashedModel, names, copy::table, "backup's hash-placed tables");
        }
    }

    @Test
    @Timeout(180)
    void followStandbyKeepsEveryKeyInItsPartitionIncludingTablesCreatedWhileFollowing() throws Exception {
        GridLoad before = new GridLoad("grid", 5);
        GridLoad after = new GridLoad("late-grid", 6);
        Path target = dir.resolve("standby");
        long id;
        List<TreeMap<String, byte[]>> beforeModel;
        List<TreeMap<String, byte[]>> afterModel;
        try (Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.WAL_PHYSICAL));
             VarveServer server = VarveServer.start(store, LOOPBACK, new ServerOptions().allowWrites(true))) {
            before.write(store, 2000);
            FollowedSnapshots held = new FollowedSnapshots();
            SnapshotBackup follow = new SnapshotBackup(server.address(), 1, target).follow(true).progress(held);
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (store.snapshots().isEmpty() && System.nanoTime() < deadline) before.write(store, 10); // the image is cut meanwhile
            before.write(store, 1000);
            after.write(store, 2000); // a caller-placed table created after the image: the stream carries its creation
            id = store.snapshotNow();
            beforeModel = before.copy();
            afterModel = after.copy();
            while (held.latest() < id && System.nanoTime() < deadline + TimeUnit.SECONDS.toNanos(60)) Thread.sleep(20);
            assertEquals(id, held.latest(), "the standby received the snapshot");
            follow.stop();
            run.get(60, TimeUnit.SECONDS);
        }
        try (Varve standby = Varve.open(SmallStore.config(target).build());
             SnapshotView v = standby.asOf(Standby.localSnapshot(target, id).orElseThrow())) {
            assertPartitionsEqual(beforeModel, v.table("grid"), "standby as of sender snapshot " + id);
            assertPartitionsEqual(afterModel, v.table("late-grid"), "standby as of sender snapshot " + id);
            assertPartitionsEqual(afterModel, standby.table("late-grid"), "standby's latest state");
        }
    }
}
