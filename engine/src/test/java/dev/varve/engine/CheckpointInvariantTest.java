package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Checkpoint invariants I1 (WAL before data) and I2 (a completed checkpoint leaves the store exactly at its mark). */
@Timeout(300)
class CheckpointInvariantTest {
    @TempDir
    Path dir;

    private VarveConfig config(RecoveryMode mode) {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(4).recoveryMode(mode).walSyncMode(WalSyncMode.LOG_ONLY)
                .walSegmentSize(4L << 20).checkpointFrequency(Duration.ofHours(1)).checkpointBufferSize(1L << 20).captureBufferSize(1L << 20).build();
    }

    /**
     * I1: with LOG_ONLY nothing but the checkpoint makes the WAL durable, so the WAL must be forced after the last
     * write before the mark and before the checkpoint writes its first page.
     */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(120)
    void walIsDurableBeforeAnyPageOfTheCheckpoint(RecoveryMode mode) throws Exception {
        FileOpLog io = new FileOpLog();
        try (Varve store = Varve.open(config(mode), io)) {
            DeterministicReplayTestSupport.workload(store, 0, 500);
            int from = io.ops.size();
            store.checkpoint().get();
            int walForce = io.first(from, "force wal-");
            int pageWrite = io.first(from, "write t");
            assertTrue(pageWrite >= 0, "the checkpoint wrote pages");
            assertTrue(walForce >= 0 && walForce < pageWrite, "I1: the WAL is forced before the first page write: "
                    + io.ops.subList(from, Math.min(io.ops.size(), pageWrite + 1)));
        }
    }

    private static long seqOf(byte[] v) {
        return ByteBuffer.wrap(v).getLong();
    }

    /**
     * I2: a checkpoint taken while a writer keeps writing leaves the page files at its mark, not later — pages the
     * writer changed meanwhile go out as copied at the mark. The checkpoint's first page write is held until the
     * writer has made {@link #RACED_WRITES} more writes, so the writer always races it (copy-on-write). Cutting the
     * WAL at the mark and reopening shows the page files alone: the writer's writes must be an exact prefix of its
     * sequence.
     */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(180)
    void completedCheckpointLeavesTheStoreAtItsMark(RecoveryMode mode) throws Exception {
        int keys = 20_000; // ~600 pages of 100-byte values
        HeldPageWrites io = new HeldPageWrites();
        Varve store = Varve.open(config(mode), io);
        Table t = store.table("seq");
        for (int k = 0; k < keys; k++) t.put(key(k), value(-1));
        store.checkpoint().get();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong written = new AtomicLong();
        AtomicReference<Throwable> writerFailure = new AtomicReference<>();
        Thread writer = new Thread(() -> {
            try {
                for (long s = 0; !stop.get(); s++) { // write s goes to key s % keys: a later write never hides an earlier key's absence
                    t.put(key((int) (s % keys)), value(s));
                    written.set(s + 1);
                }
            } catch (Throwable e) {
                writerFailure.set(e);
            }
        }, "I2-writer");
        writer.start();
        long markLsn;
        try {
            awaitWrites(written::get, 2L * keys, writerFailure);
            long cowBefore = store.metrics().copyOnWritePages();
            io.holdNextPageWrite(written::get, RACED_WRITES, writerFailure);
            store.checkpoint().get(); // under load: copy-on-write keeps the pages at the mark
            assertTrue(store.metrics().copyOnWritePages() > cowBefore, "the writer raced the checkpoint (copy-on-write happened)");
            markLsn = latestMark();
            awaitWrites(written::get, written.get() + RACED_WRITES, writerFailure); // writes after the mark, to be cut
        } finally {
            stop.set(true);
            writer.join(TimeUnit.SECONDS.toMillis(60));
        }
        assertFalse(writer.isAlive(), "the writer stopped");
        assertNull(writerFailure.get(), "the writer failed");
        store.halt();
        cutWalAt(markLsn, store.config().walSegmentSize());
        try (Varve reopened = Varve.open(config(mode))) {
            assertEquals(0, reopened.recoveryReport().replayedRecords(), "nothing after the mark is left to replay");
            Table r = reopened.table("seq");
            long max = -1;
            List<Long> seen = new ArrayList<>();
            for (int k = 0; k < keys; k++) {
                long s = seqOf(r.get(key(k)));
                seen.add(s);
                max = Math.max(max, s);
            }
            assertTrue(max >= 2 * keys - 1, "the checkpoint holds the writes before it");
            for (int k = 0; k < keys; k++) {
                long s = seen.get(k);
                // the prefix [0, max]: each key holds its last write not after max
                long expected = max - Math.floorMod(max - k, keys);
                assertEquals(expected, s, "I2: key " + k + " is not at the cut " + max + " (a page went out later than the mark)");
            }
        }
    }

    /** How many writes the writer makes while the checkpoint's page writes are held: ~30 pages, well inside the copy-on-write buffer. */
    private static final long RACED_WRITES = 1_000;
    /** Longest wait for the writer to make progress before the test fails instead of hanging. */
    private static final long PROGRESS_WAIT_NANOS = TimeUnit.SECONDS.toNanos(60);

    /** Waits until the writer has made {@code target} writes; fails if it died or made no progress for a minute. */
    private static void awaitWrites(LongSupplier written, long target, AtomicReference<Throwable> writerFailure) throws InterruptedException {
        long deadline = System.nanoTime() + PROGRESS_WAIT_NANOS;
        while (written.getAsLong() < target) {
            if (writerFailure.get() != null) throw new AssertionError("the writer failed", writerFailure.get());
            if (System.nanoTime() - deadline > 0) throw new AssertionError("the writer made " + written.getAsLong() + " of " + target + " writes in time");
            Thread.sleep(1);
        }
    }

    /**
     * The real file system, holding the first page write after {@link #holdNextPageWrite} (a checkpoint's first page)
     * until the writer has made a number of further writes: the checkpoint is then certainly in progress while the
     * writer changes its pages.
     */
    private static final class HeldPageWrites extends FileOpLog {
        private volatile LongSupplier progress;
        private volatile long target;
        private volatile AtomicReference<Throwable> writerFailure;

        void holdNextPageWrite(LongSupplier progress, long more, AtomicReference<Throwable> writerFailure) {
            this.target = progress.getAsLong() + more;
            this.writerFailure = writerFailure;
            this.progress = progress;
        }

        @Override
        protected void beforeWrite(String name) throws IOException {
            LongSupplier p = progress;
            if (p == null || !name.endsWith(".page")) return;
            progress = null;
            try {
                awaitWrites(p, target, writerFailure);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while holding a page write", e);
            }
        }
    }

    private static byte[] value(long seq) {
        return ByteBuffer.allocate(100).putLong(seq).array();
    }

    private static byte[] key(int k) {
        return String.format("k%06d", k).getBytes();
    }

    /** The mark of the latest complete checkpoint, from its end marker. */
    private long latestMark() throws IOException {
        try (Stream<Path> s = Files.list(dir.resolve("checkpoints"))) {
            Path end = s.filter(p -> p.getFileName().toString().endsWith("-end.bin")).sorted().reduce((a, b) -> b).orElseThrow();
            return ByteBuffer.wrap(Files.readAllBytes(end)).order(ByteOrder.LITTLE_ENDIAN).getLong(24); // CheckpointMarker: markLsn
        }
    }

    /**
     * Removes every WAL record at or after {@code lsn}: zeroes the rest of its segment (and of the segment's durable
     * copy, which holds the records forces wrote), deletes later segments.
     */
    private void cutWalAt(long lsn, long segmentSize) throws IOException {
        long segment = lsn / segmentSize;
        try (Stream<Path> s = Files.list(dir.resolve("wal"))) {
            for (Path p : (Iterable<Path>) s::iterator) {
                String n = p.getFileName().toString();
                if (!n.matches("wal-\\d+\\.seg(\\.durable)?")) continue; // the next segment prepared ahead: open deletes it
                long index = Long.parseLong(n.substring(4, 20));
                if (index > segment) Files.delete(p);
                else if (index == segment) {
                    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
                        long from = lsn % segmentSize;
                        ch.write(ByteBuffer.allocate((int) (segmentSize - from)), from);
                    }
                }
            }
        }
    }
}
