package dev.varve.engine;

import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What {@link VarveMetrics}' Javadoc promises, checked after every step of a run that writes, reads, declares and
 * ranks snapshots under a rank-tree policy that drops them, forces checkpoints, closes and reopens, in both recovery
 * modes: counters never fall while the store is open; writes and reads are the operations the caller made; the gauges
 * stay within the buffers and region they count; the last checkpoint's breakdown adds up to its total and the
 * counters to the checkpoints' breakdowns; the archive's levels add up to its bytes; a closed store keeps its figures
 * and a reopened one starts them at 0. No timer-driven checkpoint runs (the period is a day), so every checkpoint is
 * one the test asked for, or the close's.
 */
class MetricsInvariantsTest {
    @TempDir
    Path dir;

    static VarveConfig config(Path dir, RecoveryMode mode) {
        return FixtureSupport.small(dir).recoveryMode(mode).name("metrics-invariants-" + mode + "-" + dir.getParent().getFileName()) // the @TempDir's own
                .checkpointFrequency(Duration.ofDays(1)).archiveSegmentSize(256L << 10).snapshotDiffChain(0).snapshotPageWindow(0)
                .retention(RankTreePolicy.levels(Retention.keepLast(2), Retention.keepLast(2))).build();
    }

    /** Every figure of {@link VarveMetrics} read once (archiveDeadBytes aside: it reads the files). */
    record Figures(long wal, long recoveryFileBytes, long checkpoints, long checkpointPages, long throttled, long archive, long reclaimed,
                   long[] perLevel, long copied, double compactness, long writes, long reads, long pagesRead, long evicted, long dirty,
                   long copyOnWrite, long bufferUsed, long bufferPages, long regionAllocated, CheckpointStats last, String failure) {
        static Figures of(VarveMetrics m) {
            return new Figures(m.walBytesWritten(), m.recoveryFileBytesWritten(), m.checkpointsCompleted(), m.checkpointPagesWritten(),
                    m.throttledNanos(), m.archiveBytes(), m.archiveBytesReclaimed(), m.archiveBytesPerLevel(), m.archiveBytesCopiedByRanking(),
                    m.diffCompactness(), m.writes(), m.reads(), m.pagesRead(), m.pagesEvicted(), m.dirtyPages(), m.copyOnWritePages(),
                    m.checkpointBufferUsedPages(), m.checkpointBufferPages(), m.dataRegionAllocatedBytes(), m.lastCheckpoint(), m.failure());
        }

        long[] counters() {
            return new long[]{wal, recoveryFileBytes, checkpoints, checkpointPages, throttled, reclaimed, copied, writes, reads, pagesRead,
                    evicted, copyOnWrite, last.id()};
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Figures f && Arrays.equals(counters(), f.counters()) && archive == f.archive && Arrays.equals(perLevel, f.perLevel)
                    && Double.compare(compactness, f.compactness) == 0 && dirty == f.dirty && bufferUsed == f.bufferUsed
                    && bufferPages == f.bufferPages && last.equals(f.last) && java.util.Objects.equals(failure, f.failure);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(counters());
        }

        @Override
        public String toString() {
            return "counters " + Arrays.toString(counters()) + ", archive " + archive + " " + Arrays.toString(perLevel) + ", dirty " + dirty
                    + ", buffer " + bufferUsed + "/" + bufferPages + ", last " + last;
        }
    }

    /** The run's own tally: the operations it made and every checkpoint it saw, by id. */
    static final class Tally {
        long writes;
        long reads;
        final Map<Long, CheckpointStats> checkpoints = new HashMap<>();

        void saw(CheckpointStats s) {
            if (s.id() == 0) return;
            CheckpointStats before = checkpoints.putIfAbsent(s.id(), s);
            if (before != null) assertEquals(before, s, "one checkpoint, two breakdowns");
        }
    }

    /** What holds of the figures at any moment of an open store. */
    private static void checkGauges(Figures f, VarveConfig c) {
        assertEquals(c.checkpointBufferSize() / c.pageSize(), f.bufferPages(), "checkpointBufferPages is the buffer's capacity in pages");
        assertTrue(f.bufferUsed() >= 0 && f.bufferUsed() <= f.bufferPages(), "checkpoint buffer used " + f.bufferUsed() + " of " + f.bufferPages());
        assertTrue(f.dirty() >= 0 && f.dirty() <= c.dataRegionSize() / c.pageSize(), "dirty pages " + f.dirty() + " beyond the region");
        assertTrue(f.regionAllocated() > 0 && f.regionAllocated() <= c.dataRegionSize() && f.regionAllocated() % c.pageSize() == 0,
                "data region allocated " + f.regionAllocated() + " of " + c.dataRegionSize());
        for (long counter : f.counters()) assertTrue(counter >= 0, f.toString());
        assertEquals(c.retention().levels().size(), f.perLevel().length, "one figure per rank level");
        for (long l : f.perLevel()) assertTrue(l >= 0, Arrays.toString(f.perLevel()));
        if (f.copied() == 0) assertTrue(Double.isNaN(f.compactness()), "NaN before the first copy, was " + f.compactness());
        else assertTrue(f.compactness() > 0 && f.compactness() <= 1.0, "diff compactness " + f.compactness());
        assertNull(f.failure(), "a sound store");
    }

    /** What holds at a quiescent moment: nothing runs, so the figures read one after the other agree. */
    private static void checkQuiescent(Figures f, VarveConfig c, Tally t) {
        checkGauges(f, c);
        assertEquals(Arrays.stream(f.perLevel()).sum(), f.archive(), "archiveBytes is the sum of archiveBytesPerLevel");
        assertEquals(t.writes, f.writes(), "writes() counts the puts and removes made");
        assertEquals(t.reads, f.reads(), "reads() counts the gets of the live state made");
        t.saw(f.last());
        checkBreakdown(f.last(), c);
        assertEquals(t.checkpoints.size(), f.checkpoints(), "checkpointsCompleted: the checkpoints seen " + t.checkpoints.keySet());
        assertEquals(t.checkpoints.values().stream().mapToLong(CheckpointStats::pages).sum(), f.checkpointPages(),
                "checkpointPagesWritten is the sum of the checkpoints' pages");
        assertEquals(t.checkpoints.values().stream().mapToLong(CheckpointStats::recoveryDataBytes).sum(), f.recoveryFileBytes(),
                "recoveryFileBytesWritten is the sum of the checkpoints' recovery-file bytes");
        // each checkpoint's share of the counters: what writers copied and waited, the WAL up to its mark
        assertTrue(t.checkpoints.values().stream().mapToLong(CheckpointStats::copyOnWritePages).sum() <= f.copyOnWrite(), f.toString());
        assertTrue(t.checkpoints.values().stream().mapToLong(CheckpointStats::throttledNanos).sum() <= f.throttled(), f.toString());
        assertTrue(t.checkpoints.values().stream().mapToLong(CheckpointStats::walBytes).sum() <= f.wal(), f.toString());
        long maxId = t.checkpoints.keySet().stream().mapToLong(Long::longValue).max().orElse(0);
        assertEquals(maxId, f.last().id(), "lastCheckpoint is the latest one");
    }

    /** What {@link CheckpointStats#reason()} says may trigger a checkpoint. */
    private static final java.util.Set<String> REASONS = java.util.Set.of("timer", "dirty pages", "wal volume", "memory pressure", "explicit",
            "shutdown", "recovery");

    /** One checkpoint's breakdown against itself. */
    private static void checkBreakdown(CheckpointStats s, VarveConfig c) {
        if (s.id() == 0) {
            assertSame(CheckpointStats.NONE, s);
            return;
        }
        assertTrue(REASONS.contains(s.reason()), "a reason the Javadoc names: " + s);
        long parts = s.lockHoldNanos() + s.recoveryDataNanos() + s.pageWriteNanos() + s.fsyncNanos();
        assertTrue(parts <= s.totalNanos(), "the parts of " + s + " exceed its total");
        assertTrue(s.pages() >= 0 && s.copyOnWritePages() >= 0 && s.copyOnWritePages() <= s.pages(), "a page is copied once a checkpoint: " + s);
        assertTrue(s.walBytes() >= 0 && s.throttledNanos() >= 0 && s.recoveryDataBytes() >= 0, s.toString());
        if (s.recoveryData().equals("physical wal")) {
            assertEquals(RecoveryMode.WAL_PHYSICAL, c.recoveryMode(), s.toString());
            assertEquals(0, s.recoveryDataBytes(), s.toString());
            assertEquals(0, s.recoveryDataNanos(), s.toString());
        } else {
            assertEquals("recovery files", s.recoveryData(), s.toString());
            if (s.pages() > 0) assertTrue(s.recoveryDataBytes() > 0, "pages were written under recovery files of 0 bytes: " + s);
        }
    }

    private static void checkNoneFell(Figures before, Figures after) {
        long[] b = before.counters();
        long[] a = after.counters();
        for (int i = 0; i < b.length; i++) assertTrue(a[i] >= b[i], "a counter fell: " + before + " -> " + after);
        // the archive only grows by appending and only shrinks by reclamation: held plus given back never falls
        assertTrue(after.archive() + after.reclaimed() >= before.archive() + before.reclaimed(), before + " -> " + after);
    }

    /** A round of the caller's operations: puts, removes, batches and gets of every kind the counters count. */
    static void round(Varve store, Table t, int round, Tally tally) {
        for (int i = 0; i < 150; i++) t.put(utf8("k" + i), bytes(round * 1000L + i, 300));
        tally.writes += 150;
        int p = 0;
        byte[] placed = null;
        for (int i = 0; placed == null; i++) {
            byte[] k = utf8("k" + i);
            if (KeyHash.partition(k, t.partitions()) == p) placed = k;
        }
        t.partition(p).put(placed, bytes(round, 100));
        tally.writes++;
        assertTrue(t.remove(utf8("k" + (round % 150))), "a present key");
        tally.writes++;
        byte[] key = utf8("batch-" + round);
        store.write(b -> b.put("t", key, bytes(round, 50)).put("u", key, bytes(round, 60)).remove("t", utf8("k" + ((round + 1) % 150))));
        tally.writes += 3;
        for (int i = 0; i < 40; i++) assertTrue(t.get(utf8("k" + (i + 20))) != null || i + 20 == round % 150 || i + 20 == (round + 1) % 150);
        assertNull(t.get(utf8("absent")));
        t.partition(p).get(placed);
        tally.reads += 42;
        // refused before anything was applied: not counted
        assertThrows(IllegalArgumentException.class, () -> t.put(new byte[store.maxKeyBytes() + 1], new byte[1]));
        assertThrows(IllegalArgumentException.class, () -> t.get(new byte[store.maxKeyBytes() + 1]));
        // scans are not point reads
        try (Cursor c = t.scan(null, null)) {
            while (c.next()) {
                c.key();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void figuresKeepTheirContractOverARunACloseAndAReopen(RecoveryMode mode) throws Exception {
        VarveConfig c = config(dir.resolve("store"), mode);
        Tally tally = new Tally();
        Varve store = Varve.open(c);
        try {
            run(store, c, tally);
        } finally {
            store.close(); // idempotent: a failed check leaves no store open under this name
        }
    }

    private void run(Varve store, VarveConfig c, Tally tally) throws Exception {
        VarveMetrics m = store.metrics();
        Figures prev = Figures.of(m);
        checkQuiescent(prev, c, tally);
        Table t = store.table("t");
        long lastRank2 = 0;
        long previous = 0;
        for (int r = 0; r < 30; r++) {
            round(store, t, r, tally);
            // raised after this round's writes changed its pages: copied into level 2 at the next checkpoint (a window of 0)
            if (r % 5 == 4) store.rank(previous, 2);
            Figures f = Figures.of(m);
            checkGauges(f, c);
            checkNoneFell(prev, f);
            prev = f;
            long s;
            if (r % 3 == 2) {
                s = store.writeAndSnapshot(b -> b.put("t", utf8("ws"), utf8("x")));
                tally.writes++;
            } else {
                s = store.snapshotNow();
            }
            try (SnapshotView v = store.asOf(s)) { // reads through a view are not reads of the live state
                v.table("t").get(utf8("k1"));
            }
            previous = s;
            if (r % 7 == 6) lastRank2 = store.snapshotNow(2);
            if (r % 4 == 3) {
                CheckpointStats cs = store.checkpoint().get();
                tally.saw(cs);
                checkBreakdown(cs, c);
                f = Figures.of(m);
                checkQuiescent(f, c, tally);
                checkNoneFell(prev, f);
                prev = f;
            }
        }
        CheckpointStats cs = store.checkpoint().get();
        tally.saw(cs);
        Figures open = Figures.of(m);
        checkQuiescent(open, c, tally);
        checkNoneFell(prev, open);
        assertTrue(open.reclaimed() > 0, "keepLast(2) dropped snapshots and their segments were reclaimed: " + open);
        assertTrue(open.copied() > 0, "raised snapshots were copied into level 2: " + open);
        assertTrue(open.perLevel()[1] > 0, "level 2 holds the raised snapshots: " + open);
        assertTrue(lastRank2 > 0 && store.snapshots().stream().anyMatch(i -> i.rank() == 2));
        assertTrue(open.dirty() == 0 && open.bufferUsed() == 0, "nothing written since the checkpoint: " + open);

        // close: a shutdown checkpoint for the writes since, then the figures stay as they were left
        t.put(utf8("after"), utf8("the last checkpoint"));
        tally.writes++;
        store.close();
        Figures closed = Figures.of(m);
        checkNoneFell(open, closed);
        assertEquals("shutdown", closed.last().reason());
        tally.saw(closed.last());
        assertEquals(tally.checkpoints.size(), closed.checkpoints());
        assertEquals(tally.writes, closed.writes());
        assertEquals(0, closed.dirty(), "the shutdown checkpoint wrote every dirty page");
        assertEquals(closed, Figures.of(m), "a closed store's figures keep their last values");
        assertEquals(Arrays.stream(closed.perLevel()).sum(), closed.archive());

        // reopen: every counter starts at 0, the last checkpoint is this open's (none), the archive is what it was
        try (Varve reopened = Varve.open(c)) {
            VarveMetrics m2 = reopened.metrics();
            Figures fresh = Figures.of(m2);
            assertSame(CheckpointStats.NONE, fresh.last(), "no checkpoint yet in this open");
            assertEquals(0, fresh.checkpoints());
            assertEquals(0, fresh.checkpointPages());
            assertEquals(0, fresh.recoveryFileBytes());
            assertEquals(0, fresh.writes());
            assertEquals(0, fresh.reads());
            assertEquals(0, fresh.copied());
            assertTrue(Double.isNaN(fresh.compactness()));
            assertEquals(0, fresh.copyOnWrite());
            assertEquals(0, fresh.throttled());
            assertEquals(0, fresh.reclaimed(), "nothing was left to reclaim at the open");
            assertEquals(0, fresh.wal(), "a clean open appends nothing");
            assertEquals(closed.archive(), fresh.archive(), "the archive holds what it held at the close");
            assertArrayEquals(closed.perLevel(), fresh.perLevel());
            Tally again = new Tally();
            checkQuiescent(fresh, c, again);
            Table t2 = reopened.table("t");
            round(reopened, t2, 100, again);
            reopened.snapshotNow();
            CheckpointStats first = reopened.checkpoint().get();
            again.saw(first);
            assertEquals(closed.last().id() + 1, first.id(), "checkpoint ids go on across a reopen");
            checkQuiescent(Figures.of(m2), c, again);
        }
    }

    /**
     * A snapshot raised to a level that holds nothing yet has no base there: lazy ranking copies every page whole, and
     * R is then 1.0, as the Javadoc says. It was 1.002 at 4 KiB pages: a whole page's range field counted as diff bytes.
     */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    void diffCompactnessIsOneWhenEveryCopiedPageWentWhole(RecoveryMode mode) {
        try (Varve store = Varve.open(config(dir.resolve("store"), mode))) {
            Table t = store.table("t");
            for (int i = 0; i < 100; i++) t.put(utf8("k" + i), bytes(i, 300));
            long s = store.snapshotNow();
            for (int i = 0; i < 100; i++) t.put(utf8("k" + i), bytes(1000 + i, 300)); // the pre-states s reads
            store.rank(s, 2); // level 2 holds nothing: no base to diff against
            store.checkpoint().join();
            VarveMetrics m = store.metrics();
            assertTrue(m.archiveBytesCopiedByRanking() > 0, "s was copied into level 2");
            assertEquals(1.0, m.diffCompactness(), "every page went whole");
        }
    }

    /**
     * The last checkpoint is this open's, and a reopen runs none unless it recovers something: a reopen of a cleanly
     * closed store ran a "recovery" checkpoint (markers, an empty recovery file) whenever the close's checkpoint had
     * written pages, as that checkpoint's WAL witness lay past its mark. Nor does a checkpoint asked for later while
     * nothing was written: the witness alone past the mark leaves the store idle, as the Javadoc says.
     */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    void anIdleReopenedStoreRunsNoCheckpoint(RecoveryMode mode) {
        VarveConfig c = config(dir.resolve("store"), mode);
        try (Varve store = Varve.open(c)) {
            store.table("t").put(utf8("k"), utf8("v"));
        } // the close's checkpoint writes the page
        try (Varve store = Varve.open(c)) {
            assertSame(CheckpointStats.NONE, store.metrics().lastCheckpoint());
            assertEquals(0, store.metrics().checkpointsCompleted());
            assertEquals(0, store.metrics().walBytesWritten());
            assertEquals(utf8("v")[0], store.table("t").get(utf8("k"))[0]);
            // a checkpoint asked for (a timer tick) runs none: past the mark the WAL holds the close's witness alone
            assertSame(CheckpointStats.NONE, store.checkpoint().join(), "an idle store runs no checkpoint");
            assertSame(CheckpointStats.NONE, store.checkpoint().join());
            assertEquals(0, store.metrics().checkpointsCompleted());
        }
        try (Varve store = Varve.open(c)) { // the witness is still the only record past the mark: no checkpoint at all
            assertSame(CheckpointStats.NONE, store.metrics().lastCheckpoint());
            assertSame(CheckpointStats.NONE, store.checkpoint().join());
            assertEquals(0, store.metrics().checkpointsCompleted());
        }
        try (Varve store = Varve.open(c)) { // and the next checkpoint goes on from the close's mark
            store.table("t").put(utf8("k2"), utf8("v2"));
            CheckpointStats s = store.checkpoint().join();
            assertEquals(1, s.pages() > 0 ? store.metrics().checkpointsCompleted() : -1, s.toString());
        }
        try (Varve store = Varve.open(c)) {
            assertEquals(utf8("v2")[0], store.table("t").get(utf8("k2"))[0]);
        }
    }

    /**
     * Gauges and counters read while a writer and checkpoints run: the counters never fall, the checkpoint buffer never
     * shows more pages in use than it has, dirty pages stay within the region; once the writer stops, a checkpoint
     * leaves no page dirty or held and the buffer empty, copy-on-write or not.
     */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void figuresReadDuringWritesAndCheckpointsStayWithinBounds(RecoveryMode mode) throws Exception {
        VarveConfig c = config(dir.resolve("store"), mode);
        try (Varve store = Varve.open(c)) {
            VarveMetrics m = store.metrics();
            Table t = store.table("t");
            java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            java.util.concurrent.atomic.AtomicReference<Throwable> failed = new java.util.concurrent.atomic.AtomicReference<>();
            java.util.concurrent.atomic.AtomicLong writes = new java.util.concurrent.atomic.AtomicLong();
            Thread writer = new Thread(() -> {
                try {
                    for (int i = 0; !stop.get(); i++) {
                        t.put(utf8("k" + (i % 4000)), bytes(i, 200));
                        writes.incrementAndGet();
                        if (i % 500 == 0) store.snapshotNow();
                    }
                } catch (Throwable e) {
                    failed.set(e);
                }
            }, "metrics-writer");
            Thread sampler = new Thread(() -> {
                try {
                    Figures prev = Figures.of(m);
                    while (!stop.get()) {
                        Figures f = Figures.of(m);
                        checkGauges(f, c);
                        long[] b = prev.counters();
                        long[] a = f.counters();
                        for (int i = 0; i < b.length; i++) assertTrue(a[i] >= b[i], "a counter fell: " + prev + " -> " + f);
                        prev = f;
                    }
                } catch (Throwable e) {
                    failed.set(e);
                }
            }, "metrics-sampler");
            writer.start();
            sampler.start();
            try {
                for (int i = 0; i < 12 && failed.get() == null; i++) {
                    while (writes.get() < (i + 1) * 2000L && failed.get() == null && writer.isAlive()) Thread.sleep(1); // bounded by @Timeout
                    checkBreakdown(store.checkpoint().get(), c);
                }
            } finally {
                stop.set(true);
                writer.join();
                sampler.join();
            }
            if (failed.get() != null) throw new AssertionError("a writer or the sampler failed", failed.get());
            assertEquals(writes.get(), m.writes());
            assertTrue(m.dirtyPages() > 0, "the writer's last puts are not checkpointed yet");
            store.checkpoint().get();
            store.checkpoint().get(); // the one after a checkpoint the writer copied pages of: nothing is left held
            assertEquals(0, m.dirtyPages(), "nothing dirty or held once the checkpoints ran: " + Figures.of(m));
            assertEquals(0, m.checkpointBufferUsedPages(), Figures.of(m).toString());
            long dead = m.archiveDeadBytes();
            assertTrue(dead >= 0 && dead <= m.archiveBytes(), dead + " dead of " + m.archiveBytes());
        }
    }

    /**
     * A data region that fills faster than the dirty-page trigger fires (0.95 of it) makes writers wait for a clean
     * page, which starts a checkpoint for "memory pressure": a reason the Javadoc did not name.
     */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void everyCheckpointReasonIsOneTheJavadocNames(RecoveryMode mode) {
        VarveConfig c = config(dir.resolve("store"), mode).toBuilder().checkpointDirtyRatio(0.95).build();
        java.util.Set<String> seen = new java.util.TreeSet<>();
        try (Varve store = Varve.open(c)) {
            Table t = store.table("t");
            for (int i = 0; i < 60_000; i++) {
                t.put(utf8("k" + i), bytes(i, 300)); // some 20 MiB of leaves through an 8 MiB region
                if (i % 50 == 0) {
                    CheckpointStats s = store.metrics().lastCheckpoint();
                    checkBreakdown(s, c);
                    seen.add(s.reason());
                }
            }
            assertTrue(store.metrics().checkpointsCompleted() > 1, "the region filled: " + store.metrics());
        }
        assertTrue(REASONS.containsAll(seen), seen.toString());
    }
}
