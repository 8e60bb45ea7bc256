package dev.varve.core.wal;

import static dev.varve.core.wal.WalTestSupport.readAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.wal.WalTestSupport.Rec;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@Timeout(180)
class WalGroupCommitTest {
    private static final int THREADS = 4;
    private static final int RECORDS_PER_THREAD = 400;

    @TempDir
    Path dir;

    /** Payload: thread id, sequence number, then filler derived from both, so any damage is visible. */
    private static byte[] payload(int thread, int seq) {
        int filler = (thread * 31 + seq * 17) % 700;
        ByteBuffer b = ByteBuffer.allocate(8 + filler);
        b.putInt(thread).putInt(seq);
        for (int i = 0; i < filler; i++) b.put((byte) (thread + seq + i));
        return b.array();
    }

    /** What one of the threads {@link #onThreads} starts does. */
    private interface ThreadBody {
        void run(int thread) throws Exception;
    }

    /** Runs {@code body} on {@code threads} threads released together; returns once every one has finished. */
    private static void onThreads(int threads, ThreadBody body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                futures.add(pool.submit(() -> {
                    start.await();
                    body.run(thread);
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : futures) f.get(100, TimeUnit.SECONDS);
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void concurrentFsyncAppendsWithCommitAreAllReadBackOnceInLsnOrderWithFewerForcesThanCommits() throws Exception {
        CountingFaultyFileIOFactory io = new CountingFaultyFileIOFactory();
        io.forceDelayNanos = TimeUnit.MICROSECONDS.toNanos(200); // a disk is slower than the page cache
        AtomicInteger commits = new AtomicInteger();
        try (Wal wal = Wal.open(dir, io, 256 * 1024, WalSyncMode.FSYNC, null)) {
            io.recordForces.set(0);
            onThreads(THREADS, thread -> {
                for (int seq = 0; seq < RECORDS_PER_THREAD; seq++) {
                    long lsn = wal.append(7, ByteBuffer.wrap(payload(thread, seq)));
                    wal.commit(lsn);
                    commits.incrementAndGet();
                    assertTrue(wal.durableLsn() > lsn, "commit returned before its record was forced");
                }
            });
            int forces = io.recordForces.get();
            System.out.println("group commit: " + commits.get() + " commits, " + forces + " forces");
            assertTrue(forces < commits.get(), forces + " forces for " + commits.get() + " commits: no group commit");

            List<Rec> read = readAll(wal, wal.firstLsn());
            assertEquals(THREADS * RECORDS_PER_THREAD, read.size());
            int[] nextSeq = new int[THREADS];
            long lastLsn = -1;
            for (Rec r : read) {
                assertTrue(r.lsn() > lastLsn, "LSNs increase");
                lastLsn = r.lsn();
                ByteBuffer p = ByteBuffer.wrap(r.payload());
                int thread = p.getInt();
                int seq = p.getInt();
                assertEquals(nextSeq[thread]++, seq, "each record once, in each thread's order");
                assertEquals(ByteBuffer.wrap(payload(thread, seq)), ByteBuffer.wrap(r.payload()), "payload intact");
            }
            assertTrue(WalSegmentDescriptor.segmentIndex(wal.position(), 256 * 1024) > 0, "segment switches covered");
        }
    }

    /**
     * Appends copy their records outside the append lock and publish them in LSN order: with more writers than cores
     * and a switch every few hundred records, every record is read back once and whole, before and after a reopen
     * (whose scan refuses a record with a length behind one without). Under FSYNC the segment is staged, and its
     * buffer is reused by every next segment with the previous one's bytes still in it.
     */
    @ParameterizedTest
    @EnumSource(value = WalSyncMode.class, names = {"LOG_ONLY", "FSYNC"})
    @org.junit.jupiter.api.Timeout(120)
    void concurrentAppendsAcrossManySegmentSwitchesAreWholeAndInOrderAfterAReopen(WalSyncMode mode) throws Exception {
        int threads = 8;
        int perThread = 1000;
        long segment = 256 * 1024;
        try (Wal wal = Wal.open(dir, new CountingFaultyFileIOFactory(), segment, mode, null)) {
            onThreads(threads, thread -> {
                for (int seq = 0; seq < perThread; seq++) wal.append(7, ByteBuffer.wrap(payload(thread, seq)));
            });
            assertTrue(WalSegmentDescriptor.segmentIndex(wal.position(), segment) > 5, "several segment switches");
            checkEveryRecordOnceInThreadOrder(readAll(wal, wal.firstLsn()), threads, perThread);
        }
        try (Wal wal = Wal.open(dir, new CountingFaultyFileIOFactory(), segment, mode, null)) {
            assertTrue(wal.tailCut().isEmpty(), "a clean close leaves no torn tail");
            checkEveryRecordOnceInThreadOrder(readAll(wal, wal.firstLsn()), threads, perThread);
        }
    }

    private static void checkEveryRecordOnceInThreadOrder(List<Rec> read, int threads, int perThread) {
        assertEquals(threads * perThread, read.size());
        int[] nextSeq = new int[threads];
        for (Rec r : read) {
            ByteBuffer p = ByteBuffer.wrap(r.payload());
            int thread = p.getInt();
            int seq = p.getInt();
            assertEquals(nextSeq[thread]++, seq, "each record once, in each thread's order");
            assertEquals(ByteBuffer.wrap(payload(thread, seq)), ByteBuffer.wrap(r.payload()), "payload intact");
        }
    }

    @Test
    void commitInFsyncModeForcesAndInLogOnlyModeDoesNot() {
        CountingFaultyFileIOFactory io = new CountingFaultyFileIOFactory();
        try (Wal wal = Wal.open(dir.resolve("fsync"), io, WalTestSupport.SEGMENT_SIZE, WalSyncMode.FSYNC, null)) {
            io.recordForces.set(0);
            long lsn = wal.append(1, ByteBuffer.allocate(10));
            assertTrue(wal.durableLsn() <= lsn);
            wal.commit(lsn);
            assertEquals(1, io.recordForces.get());
            assertTrue(wal.durableLsn() > lsn);
            wal.commit(lsn); // already durable: no second force
            assertEquals(1, io.recordForces.get());
        }
        try (Wal wal = Wal.open(dir.resolve("logonly"), io, WalTestSupport.SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            io.recordForces.set(0);
            long lsn = wal.append(1, ByteBuffer.allocate(10));
            wal.commit(lsn);
            assertEquals(0, io.recordForces.get());
            wal.force(); // the checkpointer's call (I1) forces in every mode
            assertEquals(1, io.recordForces.get());
            assertTrue(wal.durableLsn() > lsn);
        }
    }

    /**
     * Gathering: a thread about to force waits for the writers the last force woke. Four writers committing over a
     * slow force make groups of about four; without gathering the groups alternate between one (the first writer
     * back forces for itself alone) and three, two on average, so forces stay above 40% of the commits.
     */
    @Test
    void aForceWaitsForTheWritersTheLastOneWoke() throws Exception {
        CountingFaultyFileIOFactory io = new CountingFaultyFileIOFactory();
        io.forceDelayNanos = TimeUnit.MILLISECONDS.toNanos(2);
        int perThread = 50;
        try (Wal wal = Wal.open(dir, io, WalTestSupport.SEGMENT_SIZE, WalSyncMode.FSYNC, null)) {
            io.recordForces.set(0);
            onThreads(THREADS, thread -> {
                for (int seq = 0; seq < perThread; seq++) wal.commit(wal.append(7, ByteBuffer.wrap(payload(thread, seq))));
            });
            int commits = THREADS * perThread;
            int forces = io.recordForces.get();
            assertTrue(forces <= commits * 0.4, forces + " forces for " + commits + " commits of " + THREADS
                    + " writers: groups of " + (double) commits / forces + " on average, not gathered");
        }
    }

    /**
     * A staged segment (FSYNC) writes exactly the bytes a mapped one (LOG_ONLY) does: the same records across segment
     * switches leave identical files, padding, seals and the zero tail included, though the staged buffer held the
     * previous segment's records where the next one's padding goes. Only the headers differ, each recording its mode.
     */
    @Test
    void stagedAndMappedSegmentsWriteTheSameFiles() throws Exception {
        long segment = 64 * 1024;
        for (WalSyncMode mode : List.of(WalSyncMode.LOG_ONLY, WalSyncMode.FSYNC)) {
            try (Wal wal = Wal.open(dir.resolve(mode.name()), new CountingFaultyFileIOFactory(), segment, mode, null)) {
                for (int seq = 0; seq < 600; seq++) {
                    long lsn = wal.append(7, ByteBuffer.wrap(payload(seq % 3, seq)));
                    if (seq % 7 == 0) wal.commit(lsn);
                }
                assertTrue(WalSegmentDescriptor.segmentIndex(wal.position(), segment) >= 3, "several segment switches");
            }
        }
        List<Path> mapped;
        try (Stream<Path> files = Files.list(dir.resolve("LOG_ONLY"))) {
            mapped = files.sorted().toList();
        }
        for (Path m : mapped) {
            Path staged = dir.resolve("FSYNC").resolve(m.getFileName());
            byte[] a = Files.readAllBytes(m);
            byte[] b = Files.readAllBytes(staged);
            assertEquals(-1, java.util.Arrays.mismatch(a, WalSegmentDescriptor.HEADER_SIZE, a.length, b, WalSegmentDescriptor.HEADER_SIZE, b.length),
                    m.getFileName() + " differs past its header at that offset");
            assertEquals(WalSyncMode.LOG_ONLY, WalSegmentDescriptor.writtenUnder(java.nio.ByteBuffer.wrap(a).order(java.nio.ByteOrder.LITTLE_ENDIAN)));
            assertEquals(WalSyncMode.FSYNC, WalSegmentDescriptor.writtenUnder(java.nio.ByteBuffer.wrap(b).order(java.nio.ByteOrder.LITTLE_ENDIAN)));
        }
        try (Stream<Path> files = Files.list(dir.resolve("FSYNC"))) {
            assertEquals(mapped.size(), files.count());
        }
    }

    @Test
    void backgroundModeForcesPeriodically() throws InterruptedException {
        CountingFaultyFileIOFactory io = new CountingFaultyFileIOFactory();
        try (Wal wal = Wal.open(dir, io, WalTestSupport.SEGMENT_SIZE, WalSyncMode.BACKGROUND, Duration.ofMillis(5))) {
            long lsn = wal.append(1, ByteBuffer.allocate(10));
            wal.commit(lsn); // returns at once
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (wal.durableLsn() <= lsn && System.nanoTime() < deadline) Thread.sleep(2);
            assertTrue(wal.durableLsn() > lsn, "background flusher forced the record");
        }
    }
}
