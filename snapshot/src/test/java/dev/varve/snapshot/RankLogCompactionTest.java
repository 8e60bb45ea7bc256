package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The join and move logs follow the retained history too: a store that raises a snapshot's rank after every batch,
 * and so makes a lazy-ranking copy at almost every checkpoint, keeps {@code joins.log} and {@code moves.log} bounded
 * — the entries of dropped snapshots that the latest mark counts are compacted away, also behind a snapshot kept for
 * good, never raised or raised (and so copied) long ago: its entries are written again at the log's end and the old
 * ones let go — and recovers to the same snapshots and ranks after a reopen, and from a kill -9 at any step of those
 * compactions.
 */
@Timeout(300)
class RankLogCompactionTest {
    private static final int MARK_EVERY = 4;

    @TempDir
    Path dir;

    /**
     * Whether snapshot 1 is kept for good: not at all, declared at rank 3, declared at rank 1 and raised to 3, or so
     * raised after snapshot 2's raise to rank 2 — whose joins, dropped with it, then lie before snapshot 1's, so that
     * the compaction that writes snapshot 1's again also rewrites the log, with the copies in it.
     */
    enum Kept { NONE, DECLARED, RAISED, RAISED_AFTER_ANOTHER }

    /**
     * keepLast(4), keepLast(3); or, when snapshot 1 is {@code kept} for good, with keepAll() above them and snapshot 1
     * at rank 3 before the others ({@link #start}): it is the oldest live snapshot for the store's life.
     */
    private static SnapshotArchive open(FileIOFactory io, Path archiveDir, Path pages, Kept kept) {
        return open(io, archiveDir, pages, kept != Kept.NONE ? RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(3), Retention.keepAll())
                : RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(3)));
    }

    /**
     * The first snapshot to {@link #run} from: 2 after declaring snapshot 1 at rank 3, or raising it there right after
     * its declaration — its joins are then the join log's first entries, and its copy into level 3 at the first mark
     * the move log's first — when asked.
     */
    private static long start(SnapshotArchive a, Kept kept) {
        if (kept == Kept.NONE) return 1;
        a.declare(1, kept == Kept.DECLARED ? 3 : 1, 1001, 4);
        if (kept == Kept.RAISED) assertTrue(a.rank(1, 3, 5));
        if (kept != Kept.RAISED_AFTER_ANOTHER) return 2;
        a.declare(2, 1, 1002, 8);
        assertTrue(a.rank(2, 2, 9));
        assertTrue(a.rank(1, 3, 10));
        return 3;
    }

    private static SnapshotArchive open(FileIOFactory io, Path archiveDir, Path pages, RankTreePolicy policy) {
        return LogCompactionTest.open(io, archiveDir, pages, policy);
    }

    private static long markOf(long id) {
        return 4 * id + 3;
    }

    /**
     * Declares {@code from} to {@code to} (WAL LSN 4·id), raising the one before each to rank 2 (4·id + 1) — with a
     * page window of 0 the next checkpoint mark moves it to level 2 — and makes a checkpoint after every
     * {@value #MARK_EVERY}, telling {@code beforeEndMarker} its id.
     */
    private static void run(SnapshotArchive a, long from, long to, LongConsumer beforeEndMarker) {
        for (long id = from; id <= to; id++) {
            a.declare(id, 1, 1000 + id, 4 * id);
            SnapshotRecord before = a.find(id - 1);
            if (before != null && before.rank() < 2) assertTrue(a.rank(id - 1, 2, 4 * id + 1), "rank " + (id - 1));
            if (id % MARK_EVERY == 0) {
                a.onMark(id, markOf(id));
                a.beforeStartMarker(id, markOf(id));
                beforeEndMarker.accept(id);
                a.afterEndMarker(id, markOf(id));
            }
        }
    }

    private static List<String> state(SnapshotArchive a) {
        List<String> out = new ArrayList<>();
        for (SnapshotRecord r : a.snapshots()) out.add(r.id() + "@" + r.rank());
        return out;
    }

    private static long bytesOf(Path archiveDir, String prefix) {
        try (Stream<Path> files = Files.list(archiveDir)) {
            return files.filter(p -> p.getFileName().toString().startsWith(prefix)).mapToLong(p -> p.toFile().length()).sum();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @ParameterizedTest(name = "snapshot 1 kept for good: {0}")
    @EnumSource(Kept.class)
    void theJoinAndMoveLogsHoldTheRetainedHistoryNotAllOfIt(Kept kept) {
        Path archiveDir = dir.resolve("archive");
        long last = 12_000;
        List<String> before;
        long bound = MaplogDescriptor.entryOffset(2 * (SnapshotRegistry.COMPACT_MIN_RECORDS + 3 * MARK_EVERY));
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"), kept)) {
            a.recover(0, true);
            run(a, start(a, kept), last, id -> { });
            before = state(a);
            assertTrue(before.stream().anyMatch(s -> s.endsWith("@2")), "rank-2 snapshots live: " + before);
        }
        // uncompacted: 2 join entries (one per level) and about one move per snapshot, 32 bytes each
        assertTrue(bytesOf(archiveDir, "joins.log") <= bound, "joins.log holds " + bytesOf(archiveDir, "joins.log") + " bytes (bound " + bound + ")");
        assertTrue(bytesOf(archiveDir, "moves.log") <= bound, "moves.log holds " + bytesOf(archiveDir, "moves.log") + " bytes (bound " + bound + ")");
        if (kept != Kept.NONE) assertEquals("1@3", before.get(0));
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"), kept)) {
            a.recover(markOf(last), false); // reads the compacted logs back from their first entry held
            assertEquals(before, state(a));
            run(a, last + 1, last + 2000, id -> { });
            before = state(a);
        }
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"), kept)) {
            a.recover(markOf(last + 2000), false);
            assertEquals(before, state(a));
        }
    }

    @ParameterizedTest(name = "snapshot 1 kept for good: {0}")
    @EnumSource(Kept.class)
    void aCompactionOfTheJoinOrMoveLogCutShortAtAnyStepRecoversTheSameSnapshots(Kept kept) {
        Path archiveDir = dir.resolve("archive");
        LogCompactionTest.CrashImages io = new LogCompactionTest.CrashImages(archiveDir, dir.resolve("images"));
        Map<Long, List<String>> stateAt = new HashMap<>();
        long last = 6_000; // the join log compacts first at about 2,100 snapshots, the move log at about 4,100
        try (SnapshotArchive a = open(io, archiveDir, dir.resolve("pages"), kept)) {
            a.recover(0, true);
            run(a, start(a, kept), last, id -> {
                stateAt.put(id, state(a));
                io.armed = id; // the end marker's work: after the mark is durable
            });
            io.armed = 0;
        }
        List<String> imaged = io.taken.stream().filter(s -> s.contains("joins.log") || s.contains("moves.log")).toList();
        assertTrue(imaged.stream().anyMatch(s -> s.contains("renaming_joins.log")) && imaged.stream().anyMatch(s -> s.contains("deleting_moves.log")),
                "both logs were compacted: " + io.taken);
        for (String image : imaged) {
            Path copy = dir.resolve("images").resolve(image);
            long latest = Long.parseLong(image.substring(0, image.indexOf('-')));
            for (int open = 0; open < 2; open++) { // and again after the recovery cut deleted what the compaction left
                try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, copy, dir.resolve("pages-" + image), kept)) {
                    a.recover(markOf(latest), false);
                    assertEquals(stateAt.get(latest), state(a));
                } catch (RuntimeException | AssertionError e) {
                    throw new AssertionError("crash image " + image + " (open " + (open + 1) + "): " + e.getMessage(), e);
                }
            }
        }
    }

    /** The names of the parts of log {@code name} in {@code archiveDir}: a rewrite renames it after its first entry held. */
    private static List<String> partsOf(Path archiveDir, String name) {
        try (Stream<Path> files = Files.list(archiveDir)) {
            return files.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(name)).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Snapshot 1, raised to a keepAll() level right after its declaration, holds the first entries of the join and move
     * logs for good. A compaction blocked at them writes them again at the log's end (the raise's positions, the copy's
     * target) for a compaction after the next mark to let the old ones go. Closed right after the checkpoint that wrote
     * them — they are then on disk past what its mark counts, as a crash before the next mark leaves them — the store
     * recovers from that mark to the same snapshots and ranks, cutting the copies; and after more steps, and reopening,
     * the log is bounded and reads back the same again.
     */
    @ParameterizedTest
    @ValueSource(strings = {"joins.log", "moves.log"})
    void entriesWrittenAgainBeforeTheNextMarkAreCutByRecoveryFromTheMarkBefore(String name) {
        Map<Long, List<String>> parts = new HashMap<>();
        Map<Long, List<String>> stateAt = new HashMap<>();
        Path first = dir.resolve("first");
        long upTo = name.equals("joins.log") ? 2400 : 6000; // past the first rewrite: at about 1,370 and 4,110 snapshots
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, first, dir.resolve("pages-first"), Kept.RAISED)) {
            a.recover(0, true);
            run(a, start(a, Kept.RAISED), upTo, id -> parts.put(id, partsOf(first, name))); // as the end markers before left them
        }
        long renamedBy = parts.keySet().stream().filter(id -> !parts.get(id).equals(List.of(name))).mapToLong(Long::longValue).min()
                .orElseThrow(() -> new AssertionError(name + " never rewritten in " + upTo + " snapshots"));
        long written = renamedBy - 2 * MARK_EVERY; // the end marker before the one that renamed it wrote them again
        Path archiveDir = dir.resolve("archive");
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"), Kept.RAISED)) {
            a.recover(0, true);
            run(a, start(a, Kept.RAISED), written, id -> stateAt.put(id, state(a)));
        } // close writes what was appended: the copies, past the mark
        MaplogDescriptor.Kind kind = name.equals("joins.log") ? MaplogDescriptor.Kind.JOINS : MaplogDescriptor.Kind.MOVES;
        long copiedAs = name.equals("joins.log") ? markOf(written) : markOf(written) + 1;
        try (MaplogFile log = new MaplogFile(UnforcedFileIOFactory.INSTANCE, archiveDir.resolve(name), kind, MaplogDescriptor.NO_LEVEL, 16,
                MaplogFile.Missing.CORRUPT)) {
            int n = (int) (log.count() - log.first());
            long[] a = new long[n];
            long[] ids = new long[n];
            log.read(log.first(), n, a, ids, null);
            assertEquals(1, ids[0], "snapshot 1's entries first");
            assertEquals(1, ids[n - 1], "written again last");
            assertEquals(copiedAs, a[n - 1]);
        }
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"), Kept.RAISED)) {
            a.recover(markOf(written), false);
            assertEquals(stateAt.get(written), state(a));
            run(a, written + 1, written + 2 * MARK_EVERY, id -> { });
            assertEquals(stateAt.get(written).get(0), state(a).get(0));
        }
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"), Kept.RAISED)) {
            a.recover(markOf(written + 2 * MARK_EVERY), false);
            assertEquals("1@3", state(a).get(0));
            List<String> live = state(a);
            run(a, written + 2 * MARK_EVERY + 1, upTo, id -> { });
            assertTrue(bytesOf(archiveDir, name) < MaplogDescriptor.entryOffset(SnapshotRegistry.COMPACT_MIN_RECORDS), name + " holds "
                    + bytesOf(archiveDir, name) + " bytes after " + upTo + " snapshots: " + partsOf(archiveDir, name) + ", live " + live);
        }
    }

    /**
     * A power cut at each operation on the join log during the end-marker work that writes snapshot 1's joins again
     * and rewrites the log in the same go (snapshot 1 raised after another, checkpoint 1,368), or that lets its old
     * joins go after the next mark (snapshot 1 raised first, 1,372): writes not forced are lost, kept or torn, and new
     * directory entries not forced are lost. The store recovers from that mark to the same snapshots and ranks.
     */
    @ParameterizedTest
    @CsvSource({"RAISED_AFTER_ANOTHER, 1368", "RAISED, 1372"})
    void aPowerCutAtAnyStepOfAJoinLogRefreshRecoversTheSameSnapshots(Kept kept, long checkpoint) {
        List<String> ops = new ArrayList<>();
        for (int k = 1; ; k++) {
            Path at = dir.resolve("cut-" + k);
            FaultyFileIOFactory io = new FaultyFileIOFactory(checkpoint * 1000 + k);
            io.strictDirectoryEntries(true);
            int nth = k;
            List<List<String>> atMark = new ArrayList<>();
            SnapshotArchive a = open(io, at.resolve("archive"), at.resolve("pages"), kept);
            a.recover(0, true);
            try {
                run(a, start(a, kept), checkpoint, id -> {
                    if (id != checkpoint) return;
                    atMark.add(state(a));
                    io.crashAt(FaultyFileIOFactory.nth(nth, op -> op.names("joins.log"))); // the end marker's work
                });
            } catch (RuntimeException expected) {
                // the crash
            }
            FaultyFileIOFactory.Op cut = io.crashedAt();
            if (cut == null) { // the end marker's work ran out of join log operations before the k-th
                io.crashAt(op -> false);
                a.close();
                break;
            }
            ops.add(cut.toString());
            io.powerLoss();
            try (SnapshotArchive reopened = open(UnforcedFileIOFactory.INSTANCE, at.resolve("archive"), at.resolve("pages-after"), kept)) {
                reopened.recover(markOf(checkpoint), false);
                assertEquals(atMark.get(0), state(reopened));
            } catch (RuntimeException | AssertionError e) {
                throw new AssertionError("power cut at " + cut + ", " + io + ": " + e.getMessage(), e);
            }
        }
        assertTrue(ops.stream().anyMatch(op -> op.contains("MOVE")) && ops.stream().anyMatch(op -> op.contains("DELETE")),
                "the join log was rewritten at checkpoint " + checkpoint + ": " + ops);
    }

    /**
     * Under keepAll() every raise and copy stays needed: there is nothing to let go, so nothing is written again and
     * neither log is rewritten, however often it doubles.
     */
    @Test
    void logsWithNothingToLetGoAreNeitherWrittenAgainNorRewritten() {
        Path archiveDir = dir.resolve("archive");
        long last = 4200; // the join log reaches 4,096 entries at 2,049 snapshots, the move log at 4,097
        RankTreePolicy keepAll = RankTreePolicy.levels(Retention.keepAll(), Retention.keepAll());
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"), keepAll)) {
            a.recover(0, true);
            run(a, 1, last, id -> { });
            assertEquals(last, a.snapshots().size());
        }
        assertEquals(List.of("joins.log"), partsOf(archiveDir, "joins.log"));
        assertEquals(MaplogDescriptor.entryOffset(2 * (last - 1)), bytesOf(archiveDir, "joins.log"), "a raise of every snapshot but the latest, 2 levels");
        assertEquals(List.of("moves.log"), partsOf(archiveDir, "moves.log"));
        assertEquals(MaplogDescriptor.entryOffset(last / MARK_EVERY * MARK_EVERY - 1), bytesOf(archiveDir, "moves.log"),
                "a copy of each raised by the latest mark");
    }

    /**
     * Rank changes made between a checkpoint's mark and its end marker are not the mark's: recovery from it cuts them by
     * position, so the compaction that follows the end marker must leave them, even when they name a snapshot that
     * the policy dropped meanwhile, below the horizon. Each cycle declares four snapshots (levels keeping the last two
     * and the last rank-2 one), marks, raises the one before the mark's latest, declares one more and raises the
     * latest — dropping the first raised — before the end marker; the store is reopened at the first mark whose end
     * marker compacted the join log.
     */
    @Test
    void rankChangesAfterTheMarkSurviveTheCompactionThatFollowsIt() throws IOException {
        Path archiveDir = dir.resolve("archive");
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepLast(2), Retention.keepLast(1));
        long next = 1;
        long m = 0;
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"), policy)) {
            a.recover(0, true);
            while (Files.exists(archiveDir.resolve("joins.log"))) { // until a compaction renamed it after its first entry held
                assertTrue(m < 4 * 2000, "no join log compaction after " + m + " snapshots");
                for (m += 4; next <= m; next++) a.declare(next, 1, 1000 + next, 8 * next);
                a.onMark(m, 8 * m + 3);
                a.beforeStartMarker(m, 8 * m + 3);
                assertTrue(a.rank(m - 1, 2, 8 * m + 4));
                a.declare(next, 1, 1000 + next, 8 * next);
                next++;
                assertTrue(a.rank(m, 2, 8 * m + 9));
                assertTrue(a.find(m - 1) == null, "snapshot " + (m - 1) + " dropped before the end marker");
                a.afterEndMarker(m, 8 * m + 3);
            }
        }
        try (SnapshotArchive a = open(UnforcedFileIOFactory.INSTANCE, archiveDir, dir.resolve("pages"), policy)) {
            a.recover(8 * m + 3, false); // the raises after the mark are the WAL's to replay; its drops stay
            assertEquals(List.of(m + "@1"), state(a));
        }
    }
}
