package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * The retention policy adds each step back of the wall clock to it, so that keepFor ages count elapsed time; a restart
 * lost those steps, and a snapshot declared while the clock ran ahead then held every later snapshot of its level until
 * the clock passed its time again (a year, for a clock that booted a year ahead). The correction and the latest time
 * read are recorded with each checkpoint mark and taken back at open, together with a step back the clock took while
 * the store was down. The wall clock is injected and stepped; every step here is a year, the keepFor age ten minutes.
 */
@Timeout(180)
class ClockStepRestartTest {
    private static final RankTreePolicy POLICY = RankTreePolicy.levels(Retention.keepFor(Duration.ofMinutes(10)));
    private static final long T0 = Duration.ofDays(20_000).toMillis();
    private static final long YEAR = Duration.ofDays(365).toMillis();
    private static final long MARK = 10;

    @TempDir
    Path dir;

    private final AtomicLong wall = new AtomicLong(T0);
    private final FileIOFactory io = FileIOFactory.standard();

    private SnapshotArchive open() {
        // the checks here are the test's own (liveAt): an archiver's landing between a step and a declaration would
        // count that declaration from the check (a test below does so on purpose)
        return SteppedClockArchives.open(dir.resolve("archive"), POLICY, wall::get);
    }

    private static void mark(SnapshotArchive a, long lsn) {
        SteppedClockArchives.mark(a, lsn);
    }

    /** Sets the wall clock to {@code millis} and applies the policy (the archiver's check): the live snapshots. */
    private static List<Long> liveAt(SnapshotArchive a, AtomicLong wall, long millis) {
        wall.set(millis);
        a.enforce();
        return a.snapshots().stream().map(SnapshotRecord::id).toList();
    }

    /**
     * Snapshot 1 declared while the clock ran a year ahead, the step back found, snapshot 2 declared five minutes after
     * it; then {@code beforeRestart} ends the run (a checkpoint at {@link #MARK}, its last one), and the store reopens
     * then. Each lives its ten minutes.
     */
    private void aheadThenBack(Consumer<SnapshotArchive> beforeRestart, Consumer<SnapshotArchive> afterRecovery) {
        PageMemory memory = new PageMemory(new PageStore(io, dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
        try (SnapshotArchive a = open()) {
            a.attach(memory);
            a.recover(0, true);
            wall.set(T0 + YEAR); // the host booted with its clock a year ahead
            a.declare(1, 1, wall.get(), 1);
            assertEquals(List.of(1L), liveAt(a, wall, T0 + YEAR));
            assertEquals(List.of(1L), liveAt(a, wall, T0), "NTP steps the clock back: snapshot 1 is a moment old");
            beforeRestart.accept(a);
        }
        try (SnapshotArchive a = open()) {
            wall.set(T0 + Duration.ofMinutes(5).toMillis()); // the archiver reads the clock from here on, replay too
            a.recover(MARK, false);
            afterRecovery.accept(a);
            assertEquals(List.of(1L, 2L), liveAt(a, wall, T0 + Duration.ofMinutes(6).toMillis()));
            assertEquals(T0 + YEAR, a.find(1).declaredMillis(), "declaration times stay the wall clock's");
            assertEquals(T0 + Duration.ofMinutes(5).toMillis(), a.find(2).declaredMillis());
            assertEquals(List.of(1L, 2L), liveAt(a, wall, T0 + Duration.ofMinutes(10).toMillis()));
            assertEquals(List.of(2L), liveAt(a, wall, T0 + Duration.ofMinutes(10).toMillis() + 1_000), "snapshot 1 lived its ten minutes");
            assertEquals(List.of(2L), liveAt(a, wall, T0 + Duration.ofMinutes(15).toMillis()));
            assertEquals(List.of(), liveAt(a, wall, T0 + Duration.ofMinutes(15).toMillis() + 1_000),
                    "snapshot 2 lived its ten minutes, not held a year by snapshot 1");
        }
    }

    /** A clean close: its last checkpoint comes after snapshot 2. */
    @Test
    void aCloseKeepsTheStepBack() {
        aheadThenBack(a -> {
            wall.set(T0 + Duration.ofMinutes(5).toMillis());
            a.declare(2, 1, wall.get(), 2);
            mark(a, MARK);
        }, a -> {
        });
    }

    /** A kill -9 after snapshot 2: recovery goes back to the checkpoint before it, and replay declares it again. */
    @Test
    void aKillKeepsTheStepBack() {
        aheadThenBack(a -> {
            mark(a, MARK);
            wall.set(T0 + Duration.ofMinutes(5).toMillis());
            a.declare(2, 1, wall.get(), MARK + 1); // no checkpoint after it: the process dies
        }, a -> a.declare(2, 1, T0 + Duration.ofMinutes(5).toMillis(), MARK + 1)); // replay, with the time its snaprec holds
    }

    /**
     * The clock ran a year ahead while the store was open, and was stepped back while it was down: no read of the open
     * store saw the step, but the checkpoint of its close recorded the latest time it read, and the reopen finds the
     * clock behind it. The time the store was down is not counted (the clock cannot tell it): here a minute.
     */
    @Test
    void aStepBackWhileClosedIsFound() {
        PageMemory memory = new PageMemory(new PageStore(io, dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
        try (SnapshotArchive a = open()) {
            a.attach(memory);
            a.recover(0, true);
            wall.set(T0 + YEAR);
            a.declare(1, 1, wall.get(), 1);
            assertEquals(List.of(1L), liveAt(a, wall, T0 + YEAR + Duration.ofMinutes(1).toMillis()));
            mark(a, MARK); // the close's checkpoint
        }
        try (SnapshotArchive a = open()) {
            wall.set(T0 + Duration.ofMinutes(2).toMillis()); // stepped back a year while down, reopened a minute later
            a.recover(MARK, false);
            assertEquals(List.of(1L), liveAt(a, wall, T0 + Duration.ofMinutes(2).toMillis()));
            wall.set(T0 + Duration.ofMinutes(3).toMillis());
            a.declare(2, 1, wall.get(), MARK + 1);
            assertEquals(List.of(1L, 2L), liveAt(a, wall, T0 + Duration.ofMinutes(11).toMillis()));
            assertEquals(List.of(2L), liveAt(a, wall, T0 + Duration.ofMinutes(11).toMillis() + 1_000),
                    "snapshot 1 lived its ten minutes, and the minute between the close and the reopen");
            assertEquals(List.of(2L), liveAt(a, wall, T0 + Duration.ofMinutes(13).toMillis()));
            assertEquals(List.of(), liveAt(a, wall, T0 + Duration.ofMinutes(13).toMillis() + 1_000), "snapshot 2 lived its ten minutes");
        }
    }

    /**
     * NTP steps the clock back half a second, and a declaration reads it before the archiver's next check finds the
     * step: snapshot 2 counts as declared at the archiver's latest read. The checkpoint records that (a floor), so after
     * the restart it still lives its ten minutes; it went half a second early when a lag under a second recorded none.
     */
    @Test
    void aDeclarationAfterAShortStepBackLivesItsAgeAfterARestart() {
        shortStepBack(Check.NONE, 120);
    }

    /**
     * As above, but the archiver's check lands in the same millisecond as the declaration, before it or after it (as
     * it did under a parallel run's load, when the archiver ran on its own thread and read the stepped clock): it finds
     * the step then, so the policy's clock runs the step less 10 ms behind the wall clock, and snapshot 2 counts as
     * declared at its own time — it lives its ten minutes from its declaration to the millisecond, 10 ms less than
     * above, where the step was found 10 ms later and the policy's clock lost those 10 ms.
     */
    @ParameterizedTest
    @EnumSource(value = Check.class, names = {"BEFORE_DECLARATION", "AFTER_DECLARATION"})
    void aCheckAtTheDeclarationAfterAShortStepBackCountsItFromThenAfterARestart(Check check) {
        shortStepBack(check, 110);
    }

    /** Where the archiver's check of the policy lands, reading the clock when snapshot 2 does. */
    enum Check {
        NONE, BEFORE_DECLARATION, AFTER_DECLARATION
    }

    /**
     * Snapshot 1 declared at T0, the clock read at T0 + 100 ms and then stepped back half a second, snapshot 2 declared
     * 10 ms after that read (elapsed time), {@code check} there, the policy checked at 20 ms; a checkpoint, a restart.
     * Snapshot 2 lives until {@code keptUntil} ms after T0 plus its ten minutes (elapsed time), and no longer.
     */
    private void shortStepBack(Check check, long keptUntil) {
        long step = 500;
        long age = Duration.ofMinutes(10).toMillis();
        PageMemory memory = new PageMemory(new PageStore(io, dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
        try (SnapshotArchive a = open()) {
            a.attach(memory);
            a.recover(0, true);
            a.declare(1, 1, T0, 1);
            assertEquals(List.of(1L), liveAt(a, wall, T0 + 100));
            wall.set(T0 + 110 - step); // 10 ms after that read, in elapsed time
            if (check == Check.BEFORE_DECLARATION) assertEquals(List.of(1L), liveAt(a, wall, wall.get()));
            a.declare(2, 1, wall.get(), 2);
            if (check == Check.AFTER_DECLARATION) assertEquals(List.of(1L, 2L), liveAt(a, wall, wall.get()));
            assertEquals(List.of(1L, 2L), liveAt(a, wall, T0 + 120 - step));
            mark(a, MARK);
        }
        try (SnapshotArchive a = open()) {
            wall.set(T0 + 130 - step);
            a.recover(MARK, false);
            assertEquals(List.of(2L), liveAt(a, wall, T0 + age + 101 - step), "snapshot 1 lived its ten minutes");
            assertEquals(List.of(2L), liveAt(a, wall, T0 + keptUntil + age - step), "snapshot 2 lives its ten minutes, not half a second less");
            assertEquals(List.of(), liveAt(a, wall, T0 + keptUntil + age + 1 - step));
        }
    }

    /**
     * A mark of an earlier build holds no clock entries and reads as no correction; and a key this build does not
     * know, below END, is skipped as every build since the counts skips one, which is how an earlier build reads a
     * mark holding the clock.
     */
    @Test
    void aMarkWithoutTheClockReadsAsNoCorrectionAndUnknownKeysAreSkipped() throws IOException {
        Path archive = Files.createDirectories(dir.resolve("archive"));
        try (MaplogFile older = new MaplogFile(io, archive.resolve(ArchiveMarksDescriptor.FILE), MaplogDescriptor.Kind.MARKS, MaplogDescriptor.NO_LEVEL, 16,
                MaplogFile.Missing.CREATE)) {
            long[][] group = {{1, 5}, {1001, 7}, {2001, 1}, {2002, 0}, {2003, 0}, {2004, 0}, {2005, 1}, {2006, 1}, {2050, 99}, {2100, 10}};
            for (long[] e : group) older.append(MARK, e[0], e[1]);
            older.force();
        }
        try (ArchiveMarks marks = new ArchiveMarks(io, archive, 16, MaplogFile.Missing.CORRUPT)) {
            ArchiveMarks.Mark m = marks.find(MARK, 1);
            assertEquals(1, m.highWater());
            assertEquals(0, m.clock().correction());
            assertFalse(m.clock().known(), "no latest time read: the open goes on as before the clock was recorded");
        }
    }
}
