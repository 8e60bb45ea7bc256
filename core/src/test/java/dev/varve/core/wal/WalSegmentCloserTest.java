package dev.varve.core.wal;

import static dev.varve.core.wal.WalTestSupport.SEGMENT_SIZE;
import static dev.varve.core.wal.WalTestSupport.readAll;
import static dev.varve.core.wal.WalTestSupport.segmentFile;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DamageSink;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.wal.WalTestSupport.Rec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The second half of a mapped segment's switch ({@link WalSegmentCloser}): the appending thread forces nothing, the
 * new segment is written under its temporary name until the old one is durable, and a crash in that window loses no
 * record — open takes the unnamed successor of a sealed segment, and verify agrees.
 */
@Timeout(60)
class WalSegmentCloserTest {
    @TempDir
    Path dir;
    @TempDir
    Path crashImage;

    private final CountingFaultyFileIOFactory io = new CountingFaultyFileIOFactory();
    private final List<byte[]> payloads = new ArrayList<>();
    private final Random rnd = WalTestSupport.seeded("closer");

    private long append(Wal wal, int bytes) {
        byte[] p = WalTestSupport.randomBytes(rnd, bytes);
        payloads.add(p);
        return wal.append(7, ByteBuffer.wrap(p));
    }

    private static Path temp(Path dir, long index) {
        return dir.resolve(WalSegmentDescriptor.fileName(index) + WalSegmentDescriptor.TEMP_SUFFIX);
    }

    @Test
    void theAppendThatSwitchesForcesNothingAndAForceNamesTheNewSegment() {
        try (Wal wal = Wal.open(dir, io, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            long first = append(wal, 40_000); // past half: segment 1 is prepared in the background
            while (!wal.nextSegmentReady()) LockSupport.parkNanos(1_000_000);
            io.watched = Thread.currentThread();
            long second = append(wal, 40_000);
            io.watched = null;
            assertEquals(1, WalSegmentDescriptor.segmentIndex(second, SEGMENT_SIZE));
            assertEquals(0, io.forcesOnWatched.get(), "the switch left forcing segment 0 to the closer");
            wal.force();
            assertTrue(Files.exists(segmentFile(dir, 1)), "named once segment 0 is durable");
            assertFalse(Files.exists(temp(dir, 1)));
            assertEquals(2, readAll(wal, first).size());
        }
    }

    @Test
    @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a switch stuck on the force lock is not interruptible
    void aSwitchDoesNotWaitForAForceInProgress() throws Exception {
        // the checkpointer's force of a period's records can take its msync a second on a busy disk; writers, behind
        // the one that switches, must not stand still for it
        try (Wal wal = Wal.open(dir, io, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            long first = append(wal, 40_000);
            while (!wal.nextSegmentReady()) LockSupport.parkNanos(1_000_000);
            io.recordForceGate = new CountDownLatch(1);
            Thread forcer = new Thread(wal::force, "forcer");
            forcer.setDaemon(true);
            forcer.start();
            while (io.recordForcesHeld.get() == 0) LockSupport.parkNanos(1_000_000); // inside the force, holding the force lock
            long second = append(wal, 40_000); // switches to segment 1; hangs until the timeout if it waits for the force
            assertEquals(1, WalSegmentDescriptor.segmentIndex(second, SEGMENT_SIZE));
            assertTrue(forcer.isAlive(), "the force is still held");
            io.recordForceGate.countDown();
            forcer.join();
            wal.force();
            assertTrue(Files.exists(segmentFile(dir, 1)), "named once segment 0 is durable");
            assertEquals(2, readAll(wal, first).size());
        }
    }

    @Test
    void aForceCoversTheRecordsTheSwitchLeftToTheCloser() throws Exception {
        // I1: the checkpoint forces the WAL before it writes a page; records of the old segment are part of that
        io.holdRenamesTo = WalSegmentDescriptor.fileName(1);
        io.renameGate = new CountDownLatch(1); // the closer cannot finish: segment 0 durable, then segment 1 named
        try (Wal wal = Wal.open(dir, io, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            append(wal, 40_000);
            long inNext = append(wal, 40_000);
            assertEquals(1, WalSegmentDescriptor.segmentIndex(inNext, SEGMENT_SIZE));
            java.util.concurrent.CompletableFuture<Void> force = java.util.concurrent.CompletableFuture.runAsync(wal::force);
            try {
                LockSupport.parkNanos(200_000_000L); // ample for a force that would not wait for the closer to return
                assertFalse(force.isDone(), "force returned before the segment the switch left behind was durable");
            } finally {
                io.renameGate.countDown();
            }
            force.get();
            assertTrue(Files.exists(segmentFile(dir, 1)));
            assertTrue(wal.durableLsn() > inNext, "durable past the new segment's record");
        }
    }

    @Test
    void aForceThatFinishesItsOwnSegmentsSwitchDoesNotWriteToItAfterwards() throws Exception {
        // A force reads the segment being switched away from while the switch has begun its second half but not yet
        // made the next segment current, then finishes that half on its own thread: the closer makes the segment whole
        // and retires it, closing its files, as the next segment is current by then. The force then wrote to the closed
        // copy and failed the WAL (a kill -9 test's checkpoint did, under memory pressure).
        io.holdRenamesTo = WalSegmentDescriptor.fileName(2);
        io.renameGate = new CountDownLatch(1); // the force, running the switch's second half, waits at naming segment 2
        AtomicReference<Wal> walRef = new AtomicReference<>();
        AtomicBoolean armed = new AtomicBoolean();
        AtomicReference<Thread> forcer = new AtomicReference<>();
        AtomicReference<Throwable> forceFailure = new AtomicReference<>();
        try (Wal wal = Wal.open(dir, io, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            walRef.set(wal);
            wal.threadFactory(task -> {
                if (!armed.compareAndSet(true, false)) return new Thread(task);
                // the closer's thread for the switch from segment 1, asked for before segment 2 is made current
                Thread f = new Thread(() -> {
                    try {
                        walRef.get().force();
                    } catch (Throwable t) {
                        forceFailure.set(t);
                    }
                }, "forcer");
                f.setDaemon(true);
                f.start();
                forcer.set(f);
                while (io.renamesHeld.get() == 0 && f.isAlive()) LockSupport.parkNanos(1_000_000);
                return new Thread(() -> { }); // leaves the second half to the force, which is running it
            });
            long first = append(wal, 40_000);
            append(wal, 40_000); // switches to segment 1; nothing forces, so the durable LSN stays in segment 0
            while (!wal.nextSegmentReady() || !Files.exists(segmentFile(dir, 1))) LockSupport.parkNanos(1_000_000);
            armed.set(true);
            long third = append(wal, 40_000); // switches to segment 2
            assertEquals(2, WalSegmentDescriptor.segmentIndex(third, SEGMENT_SIZE));
            assertTrue(forcer.get().isAlive(), "the force waits at naming segment 2");
            io.renameGate.countDown();
            forcer.get().join();
            assertNull(forceFailure.get(), "the force of segment 1's records");
            assertNull(wal.failure());
            wal.force();
            assertTrue(wal.durableLsn() > third);
            assertEquals(3, readAll(wal, first).size());
        }
        try (Wal wal = Wal.open(dir, FileIOFactory.standard(), SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            List<Rec> read = readAll(wal, wal.firstLsn());
            assertEquals(payloads.size(), read.size());
            for (int i = 0; i < read.size(); i++) assertArrayEquals(payloads.get(i), read.get(i).payload());
        }
    }

    @Test
    void recordsInTheUnnamedSuccessorSurviveACrashOfTheProcessAndVerifyAgrees() throws IOException {
        io.holdRenamesTo = WalSegmentDescriptor.fileName(1);
        io.renameGate = new CountDownLatch(1); // the closer cannot name segment 1: the window a crash may hit
        long first;
        try (Wal wal = Wal.open(dir, io, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            first = append(wal, 30_000);
            append(wal, 30_000);
            long inNext = append(wal, 30_000);
            append(wal, 500);
            assertEquals(1, WalSegmentDescriptor.segmentIndex(inNext, SEGMENT_SIZE));
            assertTrue(Files.exists(temp(dir, 1)) && !Files.exists(segmentFile(dir, 1)), "segment 1 has no name yet");
            assertEquals(4, readAll(wal, first).size(), "readers find the segment under its temporary name");
            // what kill -9 leaves: the files as the OS has them (the page cache), segment 1 still unnamed
            for (Path f : List.of(segmentFile(dir, 0), temp(dir, 1))) Files.copy(f, crashImage.resolve(f.getFileName()));
            io.renameGate.countDown();
        }
        List<String> damage = new ArrayList<>();
        WalFileCheck.Result check = WalFileCheck.check(FileIOFactory.standard(), crashImage, SEGMENT_SIZE,
                WalSyncMode.LOG_ONLY, sink(damage));
        assertEquals(List.of(), damage, "verify takes the unnamed successor of a sealed segment, as open does");
        assertEquals(2, check.segments());
        assertEquals(5, check.records(), "four records and segment 0's seal");
        assertNull(check.tornTail());
        try (Wal wal = Wal.open(crashImage, FileIOFactory.standard(), SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            assertTrue(wal.tailCut().isEmpty());
            List<Rec> read = readAll(wal, first);
            assertEquals(payloads.size(), read.size(), "no record lost");
            for (int i = 0; i < read.size(); i++) assertArrayEquals(payloads.get(i), read.get(i).payload());
            assertTrue(Files.exists(segmentFile(crashImage, 1)), "open named it");
            assertFalse(Files.exists(temp(crashImage, 1)));
            append(wal, 100);
        }
        try (Wal wal = Wal.open(crashImage, FileIOFactory.standard(), SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            assertEquals(payloads.size(), readAll(wal, first).size(), "appending went on in the named segment");
        }
    }

    /**
     * A power loss at the naming of a new segment, or right after it. With strict directory entries (POSIX: a new
     * file's entry is durable only once its directory is fsynced) the prepared file must have a durable entry before
     * the old segment's seal names it: otherwise the seal survives and the file does not, and open refuses the WAL.
     */
    @ParameterizedTest(name = "{0}, strict directory entries: {1}")
    @CsvSource({"LOG_ONLY, false", "FSYNC, false", "LOG_ONLY, true", "FSYNC, true"})
    void forcedRecordsSurviveAPowerLossAroundTheNewSegmentsNaming(WalSyncMode mode, boolean strictEntries) {
        for (long seed = 1; seed <= 24; seed++) {
            payloads.clear();
            Path d = dir.resolve(mode + "-" + strictEntries + "-seed-" + seed);
            FaultyFileIOFactory faulty = new FaultyFileIOFactory(seed);
            faulty.strictDirectoryEntries(strictEntries);
            // odd seeds: the power goes at the rename that names segment 1; even seeds: at the operation right after it
            boolean atRename = seed % 2 == 1;
            java.util.concurrent.atomic.AtomicBoolean renamed = new java.util.concurrent.atomic.AtomicBoolean();
            faulty.crashAt(op -> {
                if (renamed.get()) return true;
                boolean naming = op.kind() == FaultyFileIOFactory.Kind.MOVE && op.names(WalSegmentDescriptor.fileName(1));
                if (naming && !atRename) renamed.set(true);
                return naming && atRename;
            });
            int forced = 0;
            try (Wal wal = Wal.open(d, faulty, SEGMENT_SIZE, mode, null)) {
                append(wal, 20_000);
                append(wal, 20_000);
                wal.force();
                forced = payloads.size();
                try {
                    append(wal, 30_000); // switches; the rename (the closer's, or the switch's under FSYNC) is where the power goes
                    append(wal, 500);
                } catch (RuntimeException refusedAfterTheCrash) {
                    payloads.remove(payloads.size() - 1);
                }
            } catch (RuntimeException closeAfterTheCrash) {
                // the close cannot force what the crash left behind
            }
            faulty.powerLoss();
            List<Rec> read;
            // FSYNC promises forced records through a power loss: its WAL must open as it is; the others may need the cut
            try (Wal wal = Wal.open(WalOpenScan.run(FileIOFactory.standard(), d, SEGMENT_SIZE, mode, -1, mode != WalSyncMode.FSYNC), null)) {
                read = readAll(wal, wal.firstLsn());
            } catch (CorruptionException e) {
                throw new AssertionError(faulty + ": " + e.getMessage(), e);
            }
            assertTrue(read.size() >= forced && read.size() <= payloads.size(), faulty + ": " + read.size() + " records");
            for (int i = 0; i < read.size(); i++) assertArrayEquals(payloads.get(i), read.get(i).payload(), faulty + ": record " + i);
        }
    }

    private static DamageSink sink(List<String> damage) {
        return (file, offset, what) -> damage.add(file.getFileName() + "@" + offset + ": " + what);
    }
}
