package dev.varve.server;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.RecoveryMode;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.engine.Cursor;
import dev.varve.engine.SnapshotInfo;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Follow mode: the image, then every change committed after it, kept as a standby openable at any sender snapshot. */
@Timeout(180)
class FollowTest {
    private static final InetSocketAddress LOOPBACK = new InetSocketAddress("127.0.0.1", 0);
    /**
     * Change bytes a stuck standby must fall behind by to be cut off for sure: its read-ahead
     * ({@link SnapshotBackup#MAX_QUEUED_BYTES}), the loopback socket buffers (receive autotuned up to tcp_rmem's
     * maximum, 32 MiB on Linux by default; send up to 4 MiB) and the sender's 1 MiB follow queue hold less.
     */
    private static final long FAR_BEHIND_BYTES = 4 * SnapshotBackup.MAX_QUEUED_BYTES + (32L << 20);

    @TempDir
    Path dir;

    /** Progress that tells when the image is in and the latest sender snapshot the standby holds. */
    private static final class Held implements ShipProgress {
        final CountDownLatch imageIn = new CountDownLatch(1);
        final AtomicLong latest = new AtomicLong();

        @Override
        public void received(long pages, long imagePages, long bytes) {
        }

        @Override
        public void imageComplete(BackupResult image) {
            imageIn.countDown();
        }

        @Override
        public void followed(long writesApplied, long latestSenderSnapshot) {
            latest.set(latestSenderSnapshot);
        }
    }

    @Test
    @Timeout(180)
    void standbyOpensAtEverySnapshotDeclaredSinceAndAtTheLatestRecord() throws Exception {
        Path target = dir.resolve("standby");
        Map<Long, Map<String, TreeMap<String, byte[]>>> models = new LinkedHashMap<>();
        long last;
        BackupResult result;
        try (Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE);
             VarveServer server = VarveServer.start(store, LOOPBACK, new ServerOptions().allowWrites(true))) {
            Workload w = new Workload(99, 2000);
            w.createTables(store);
            for (int i = 0; i < 2000; i++) w.step(store);
            Held held = new Held();
            CountDownLatch imageIn = held.imageIn;
            AtomicLong latestHeld = held.latest;
            SnapshotBackup follow = new SnapshotBackup(server.address(), 1, target).follow(true).progress(held);
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (store.snapshots().isEmpty() && System.nanoTime() < deadline) w.step(store); // until the sender declared the image's snapshot
            assertEquals(1, store.snapshots().size());
            // the writer never pauses: the image is cut while it writes, and the stream carries what follows
            for (int round = 0; round < 4; round++) {
                for (int i = 0; i < 800; i++) w.step(store);
                if (round == 1) assertTrue(imageIn.await(60, TimeUnit.SECONDS), "image in place");
                if (round == 2) destroyPartition(store, w, "orders", 0);
                long id = store.snapshotNow(1 + round % 3);
                models.put(id, w.snapshot());
            }
            last = models.keySet().stream().max(Long::compare).orElseThrow();
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (latestHeld.get() < last && System.nanoTime() < deadline) Thread.sleep(20);
            assertEquals(last, latestHeld.get(), "the standby received the last snapshot");
            follow.stop();
            result = run.get(60, TimeUnit.SECONDS);
            // at least rounds 2 and 3 came after the image's snapshot (less removes of absent keys, which log nothing)
            assertTrue(result.writesFollowed() >= 1400, "writes followed: " + result.writesFollowed());
        }
        Map<Long, Long> map = Standby.snapshots(target);
        assertEquals(models.size() + 1, map.size(), "the image's snapshot and every one declared since: " + map);
        try (Varve standby = Varve.open(SmallStore.config(target).build(), UnforcedFileIOFactory.INSTANCE)) {
            for (Map.Entry<Long, Map<String, TreeMap<String, byte[]>>> m : models.entrySet()) {
                long local = Standby.localSnapshot(target, m.getKey()).orElseThrow();
                try (SnapshotView v = standby.asOf(local)) {
                    StoreAssert.assertTablesEqual(m.getValue(), v.tables(), v::table, "standby as of sender snapshot " + m.getKey());
                }
            }
            StoreAssert.assertTablesEqual(models.get(last), standby.tables(), standby::table, "standby's latest state");
        }
    }

    /**
     * A standby given a retention policy drops what it does not keep, and its snapshot map keeps only the snapshots it
     * keeps (rewritten once it doubles), where without one both grow with every snapshot the sender declares; the
     * standby's snapshots take the sender's ranks, at declaration and when raised later.
     */
    @Test
    @Timeout(300)
    void aStandbyWithARetentionPolicyKeepsItsSnapshotsAndItsMapBounded() throws Exception {
        Path target = dir.resolve("standby");
        int rewriteAt = 256; // the map's first rewrite, 4,096 lines by default: the same rewrites, fewer snapshots to wait for
        int snapshots = rewriteAt + 400;
        long last = 0;
        Map<String, TreeMap<String, byte[]>> model;
        RankTreePolicy keep3 = RankTreePolicy.levels(Retention.keepLast(3), Retention.keepLast(2));
        long ranked = 0;
        try (Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE);
             VarveServer server = VarveServer.start(store, LOOPBACK, new ServerOptions().allowWrites(true))) {
            Workload w = new Workload(7, 300);
            w.createTables(store);
            for (int i = 0; i < 300; i++) w.step(store);
            Held held = new Held();
            CountDownLatch imageIn = held.imageIn;
            AtomicLong latestHeld = held.latest;
            SnapshotBackup follow = new SnapshotBackup(server.address(), 1, target).follow(true).retention(keep3).progress(held)
                    .mapRewriteMinLines(rewriteAt);
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run);
            assertTrue(imageIn.await(60, TimeUnit.SECONDS), "image in place");
            for (int i = 1; i <= snapshots; i++) {
                w.step(store);
                last = store.snapshotNow(i % 100 == 0 ? 2 : 1);
                if (i % 100 == 0) ranked = last;
            }
            model = w.snapshot();
            store.rank(last - 1, 2); // raised later: the standby raises its own
            last = store.snapshotNow(); // after the raise in the stream: once the standby holds it, it applied the raise
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(200);
            while (latestHeld.get() < last && System.nanoTime() < deadline) Thread.sleep(20);
            assertEquals(last, latestHeld.get(), "the standby received the last snapshot");
            follow.stop();
            run.get(60, TimeUnit.SECONDS);
        }
        Map<Long, Long> map = Standby.snapshots(target);
        assertTrue(map.size() < rewriteAt, "the map was rewritten with the snapshots kept: " + map.size() + " lines");
        assertTrue(Standby.localSnapshot(target, last - 3 * rewriteAt / 4).isEmpty(), "an early one's line went with it");
        try (Varve standby = Varve.open(SmallStore.config(target).retention(keep3).build(), UnforcedFileIOFactory.INSTANCE)) {
            List<String> held = new ArrayList<>();
            for (SnapshotInfo i : standby.snapshots()) held.add(i.id() + "@" + i.rank());
            long rankedLocal = Standby.localSnapshot(target, ranked).orElseThrow();
            long raisedLocal = Standby.localSnapshot(target, last - 2).orElseThrow();
            long lastLocal = Standby.localSnapshot(target, last).orElseThrow();
            // its last 3, and its last 2 of rank 2: the one declared so, and the one raised
            assertEquals(List.of(rankedLocal + "@2", raisedLocal + "@2", (lastLocal - 1) + "@1", lastLocal + "@1"), held);
            try (SnapshotView v = standby.asOf(lastLocal - 1)) { // the loop's last snapshot, which the model holds
                StoreAssert.assertTablesEqual(model, v.tables(), v::table, "standby as of sender snapshot " + (last - 1));
            }
        }
    }

    @Test
    @Timeout(60)
    void followNeedsASenderThatAllowsWrites() {
        try (Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE);
             VarveServer server = VarveServer.start(store, LOOPBACK)) {
            BackupException e = assertThrows(BackupException.class, () -> new SnapshotBackup(server.address(), 1, dir.resolve("t")).follow(true).run());
            assertTrue(e.getMessage().contains("read-only"), e.getMessage());
            assertTrue(store.snapshots().isEmpty(), "nothing declared");
        }
    }

    @Test
    @Timeout(300)
    void aStandbyThatFallsBehindTheBufferIsCutOffWithoutSlowingTheWriters() throws Exception {
        Path target = dir.resolve("standby");
        try (Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE);
             VarveServer server = VarveServer.start(store, LOOPBACK, new ServerOptions().allowWrites(true).followBufferBytes(1 << 20)
                     .shipStallTimeout(Duration.ofMinutes(5)))) {
            Workload w = new Workload(5, 500);
            w.createTables(store);
            for (int i = 0; i < 300; i++) w.step(store);
            CountDownLatch stalled = new CountDownLatch(1);
            CountDownLatch resume = new CountDownLatch(1);
            SnapshotBackup follow = new SnapshotBackup(server.address(), 1, target).follow(true).progress(new ShipProgress() {
                @Override
                public void received(long pages, long imagePages, long bytes) {
                }

                @Override
                public void imageComplete(BackupResult image) {
                    stalled.countDown();
                    try {
                        resume.await(240, TimeUnit.SECONDS); // the standby's applier is stuck: it reads nothing meanwhile
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run);
            assertTrue(stalled.await(60, TimeUnit.SECONDS));
            // while the standby applies nothing, write far more than its read-ahead, the socket buffers and the 1 MiB
            // queue hold together (counted in change bytes: the WAL's page records say little about the stream): never blocked
            long before = w.bytesWritten();
            while (w.bytesWritten() - before < FAR_BEHIND_BYTES) w.step(store);
            resume.countDown();
            ExecutionException e = assertThrows(ExecutionException.class, () -> run.get(120, TimeUnit.SECONDS));
            assertTrue(e.getCause().getMessage().contains("fell more than 1 MiB behind"), e.getCause().getMessage());
        }
        try (Varve standby = Varve.open(SmallStore.config(target).build(), UnforcedFileIOFactory.INSTANCE)) {
            assertEquals(List.of("accounts", "blobs", "orders"), standby.tables(), "the standby opens with what it held");
        }
    }

    /** Empties a partition of the sender and takes its keys out of the model. */
    private static void destroyPartition(Varve store, Workload w, String table, int partition) {
        List<String> keys = new ArrayList<>();
        try (Cursor c = store.table(table).partition(partition).scan(null, null)) {
            while (c.next()) keys.add(new String(c.key(), StandardCharsets.UTF_8));
        }
        assertTrue(!keys.isEmpty());
        store.table(table).partition(partition).destroy();
        w.forget(table, keys);
    }
}
