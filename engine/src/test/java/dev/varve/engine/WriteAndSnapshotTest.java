package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.wal.WalSegmentDescriptor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntSupplier;

import static dev.varve.engine.FixtureSupport.rejected;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Varve#writeAndSnapshot}: the batch and the snapshot declared right after it reach the disk with one commit
 * (one WAL force under FSYNC), the snapshot holds the batch and nothing later, WAL replay restores both, and a
 * rejected call changes nothing.
 */
@Timeout(300)
class WriteAndSnapshotTest {
    private static final int CALLS = 100;

    @TempDir
    Path dir;

    private VarveConfig config(WalSyncMode sync, RecoveryMode mode) {
        return FixtureSupport.small(dir).walSyncMode(sync).recoveryMode(mode)
                .retention(RankTreePolicy.levels(Retention.keepAll(), Retention.keepAll())).build();
    }

    /** Forces of WAL segments recorded so far. */
    private static IntSupplier walForces(FileOpLog log) {
        return () -> {
            synchronized (log.ops) {
                return (int) log.ops.stream().filter(op -> op.startsWith("force wal-")).count();
            }
        };
    }

    @Test
    void oneForcePerBatchAndSnapshotUnderFsync() {
        FileOpLog log = new FileOpLog();
        IntSupplier forces = walForces(log);
        try (Varve store = Varve.open(config(WalSyncMode.FSYNC, RecoveryMode.WAL_PHYSICAL), log)) {
            store.write(b -> b.put("t", utf8("warm-up"), utf8("creates the table"))); // its CREATE_TABLE commit is not counted

            int before = forces.getAsInt();
            for (int i = 0; i < CALLS; i++) {
                int n = i;
                store.writeAndSnapshot(b -> b.put("t", utf8("k" + n % 10), utf8("v" + n)));
            }
            int together = forces.getAsInt() - before;

            before = forces.getAsInt();
            for (int i = 0; i < CALLS; i++) {
                int n = i;
                store.write(b -> b.put("t", utf8("k" + n % 10), utf8("w" + n)));
                store.snapshotNow();
            }
            int apart = forces.getAsInt() - before;
            System.out.println("WAL forces under FSYNC for " + CALLS + " batches with a snapshot each: writeAndSnapshot " + together
                    + ", write then snapshotNow " + apart);
            assertTrue(together <= CALLS, CALLS + " calls of writeAndSnapshot forced the WAL " + together + " times");
            assertEquals(2L * CALLS, store.snapshots().size());
        }
    }

    @ParameterizedTest
    @EnumSource(value = RecoveryMode.class, names = {"CHECKPOINT_RECOVERY_FILE", "WAL_PHYSICAL"})
    void theSnapshotHoldsTheBatchAndNoLaterWriteAcrossReplay(RecoveryMode mode) {
        VarveConfig config = config(WalSyncMode.FSYNC, mode);
        Varve crashed = Varve.open(config);
        crashed.write(b -> b.put("t", utf8("k"), utf8("before")).put("t", utf8("gone"), utf8("x")));
        long id = crashed.writeAndSnapshot(b -> b.put("t", utf8("k"), utf8("batch")).remove("t", utf8("gone")).put("u", utf8("k"), utf8("new table")), 2);
        crashed.write(b -> b.put("t", utf8("k"), utf8("after")).put("t", utf8("gone"), utf8("back")));
        checkSnapshot(crashed, id, 2, "before the crash");
        crashed.halt(); // nothing checkpointed: reopening replays the batch, its snaprec and the write after them

        try (Varve store = Varve.open(config)) {
            assertTrue(store.recoveryReport().replayedRecords() > 0, "the records were replayed");
            checkSnapshot(store, id, 2, "after WAL replay");
            assertArrayEquals(utf8("after"), store.table("t").get(utf8("k")));
            assertArrayEquals(utf8("back"), store.table("t").get(utf8("gone")));
        }
    }

    /**
     * A crash can keep the batch record of a writeAndSnapshot and cut off its snaprec (a kill -9 between the two
     * writes, a torn WAL tail): the pair is one commit, so open declares the snapshot the batch names, read-only opens
     * too, rather than keep the batch without it.
     */
    @ParameterizedTest
    @EnumSource(value = RecoveryMode.class, names = {"CHECKPOINT_RECOVERY_FILE", "WAL_PHYSICAL"})
    void aBatchWhoseSnaprecACrashCutOffGetsItsSnapshotAtOpen(RecoveryMode mode) throws IOException {
        VarveConfig config = config(WalSyncMode.LOG_ONLY, mode);
        Varve crashed = Varve.open(config);
        crashed.write(b -> b.put("t", utf8("k"), utf8("before")).put("t", utf8("gone"), utf8("x")));
        long id = crashed.writeAndSnapshot(b -> b.put("t", utf8("k"), utf8("batch")).remove("t", utf8("gone")).put("u", utf8("k"), utf8("new table")), 2);
        crashed.halt();
        long[] snaprec = {-1};
        WalInspector.read(config, 0, r -> {
            if (r.type().equals("SNAPSHOT")) snaprec[0] = r.lsn();
            return true;
        }, damage -> {
            throw new AssertionError("unread WAL damage: " + damage);
        });
        assertTrue(snaprec[0] > 0, "the snaprec was written");
        long segmentSize = config.walSegmentSize();
        Path segment = config.path().resolve("wal").resolve(WalSegmentDescriptor.fileName(WalSegmentDescriptor.segmentIndex(snaprec[0], segmentSize)));
        try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.WRITE)) { // the snaprec and all after it: lost, as a crash loses a tail
            int from = WalSegmentDescriptor.offset(snaprec[0], segmentSize);
            ch.write(ByteBuffer.allocate((int) (ch.size() - from)), from);
        }
        try (Varve readOnly = Varve.openReadOnly(config)) {
            checkSnapshot(readOnly, id, 2, "read-only, after the snaprec was cut off");
        }
        try (Varve store = Varve.open(config)) {
            checkSnapshot(store, id, 2, "after the snaprec was cut off");
            assertEquals(id + 1, store.snapshotNow(), "the next id");
            store.halt(); // replay again: the snaprec open appended declares the snapshot, once
        }
        try (Varve store = Varve.open(config)) {
            checkSnapshot(store, id, 2, "after a second replay");
            assertEquals(id + 2, store.snapshotNow());
        }
    }

    private static void checkSnapshot(Varve store, long id, int rank, String when) {
        SnapshotInfo info = store.snapshots().stream().filter(s -> s.id() == id).findFirst().orElseThrow();
        assertEquals(rank, info.rank(), when);
        try (SnapshotView v = store.asOf(id)) {
            assertArrayEquals(utf8("batch"), v.table("t").get(utf8("k")), when + ": the batch is in its snapshot, the later write is not");
            assertNull(v.table("t").get(utf8("gone")), when + ": the batch's remove is in its snapshot");
            assertArrayEquals(utf8("new table"), v.table("u").get(utf8("k")), when + ": so is the table the batch created");
        }
    }

    /**
     * Writers keep writing while one thread declares snapshots with its own batches, and checkpoints run: no
     * deadlock between the batch applied under the checkpoint write lock and the writers, throttle or checkpointer,
     * and each snapshot holds its own batch.
     */
    @Test
    void writeAndSnapshotAmongConcurrentWritersAndCheckpoints() throws Exception {
        VarveConfig config = FixtureSupport.small(dir).walSyncMode(WalSyncMode.FSYNC).checkpointFrequency(Duration.ofMillis(20)).build();
        ExecutorService pool = Executors.newFixedThreadPool(3);
        AtomicBoolean stop = new AtomicBoolean();
        try (Varve store = Varve.open(config)) {
            CountDownLatch started = new CountDownLatch(3);
            List<Future<?>> writers = new ArrayList<>();
            for (int w = 0; w < 3; w++) {
                int writer = w;
                writers.add(pool.submit(() -> {
                    started.countDown();
                    for (int i = 0; !stop.get(); i++) store.table("t").put(utf8("w" + writer + "-" + i % 50), utf8("v" + i));
                    return null;
                }));
            }
            started.await();
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                int n = i;
                ids.add(store.writeAndSnapshot(b -> b.put("own", utf8("counter"), utf8("c" + n))));
            }
            stop.set(true);
            for (Future<?> f : writers) f.get();
            for (int i = 0; i < ids.size(); i++) {
                try (SnapshotView v = store.asOf(ids.get(i))) {
                    assertArrayEquals(utf8("c" + i), v.table("own").get(utf8("counter")), "snapshot " + ids.get(i));
                }
            }
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }

    @Test
    void badInputIsRejectedAndChangesNothing() {
        Varve store = Varve.open(config(WalSyncMode.FSYNC, RecoveryMode.WAL_PHYSICAL));
        store.write(b -> b.put("t", utf8("k"), utf8("v")));
        int[] ran = new int[1];
        rejected(store, IllegalArgumentException.class, () -> store.writeAndSnapshot(null), "batch must not be null");
        rejected(store, IllegalArgumentException.class, () -> store.writeAndSnapshot(null, 1), "batch must not be null");
        for (int rank : new int[]{0, -1, 3}) {
            rejected(store, IllegalArgumentException.class, () -> store.writeAndSnapshot(b -> {
                ran[0]++;
                b.put("newTable", utf8("k"), utf8("v"));
            }, rank), "rank must be in [1, 2]", "was " + rank);
        }
        assertEquals(0, ran[0], "a rejected rank runs no batch");
        byte[] tooLong = new byte[store.maxKeyBytes() + 1];
        rejected(store, IllegalArgumentException.class, () -> store.writeAndSnapshot(b -> b.put("t", tooLong, utf8("v"))), "exceeds the maximum");
        rejected(store, IllegalStateException.class, () -> store.writeAndSnapshot(b -> {
            b.put("t", utf8("k"), utf8("half"));
            throw new IllegalStateException("the caller's batch failed");
        }), "the caller's batch failed");
        assertEquals(List.of("t"), store.tables(), "no table was created");
        assertArrayEquals(utf8("v"), store.table("t").get(utf8("k")));

        store.close();
        assertThrows(IllegalStateException.class, () -> store.writeAndSnapshot(b -> b.put("t", utf8("k"), utf8("closed"))));
        try (Varve ro = Varve.openReadOnly(StoreInspector.detectConfig(dir))) {
            assertThrows(ReadOnlyStoreException.class, () -> ro.writeAndSnapshot(b -> b.put("t", utf8("k"), utf8("read-only"))));
            assertEquals(List.of(), ro.snapshots());
        }
    }

    @Test
    void anEmptyBatchJustDeclaresASnapshot() {
        try (Varve store = Varve.open(config(WalSyncMode.LOG_ONLY, RecoveryMode.WAL_PHYSICAL))) {
            store.write(b -> b.put("t", utf8("k"), utf8("v")));
            long id = store.writeAndSnapshot(b -> { }, 2);
            assertEquals(List.of(id), store.snapshots().stream().map(SnapshotInfo::id).toList());
            assertEquals(2, store.snapshots().get(0).rank());
            try (SnapshotView v = store.asOf(id)) {
                assertArrayEquals(utf8("v"), v.table("t").get(utf8("k")));
            }
        }
    }
}
