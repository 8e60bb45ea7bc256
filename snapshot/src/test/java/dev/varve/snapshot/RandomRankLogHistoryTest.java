package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Random histories heavy in rank raises and lazy-ranking copies (a page window of 0: every raised snapshot is copied
 * at the next mark), under policies whose top level keeps for good — some snapshots declared there, some raised there,
 * once or twice, long after their declaration — with a checkpoint every few steps, idle end-marker work, and reopens
 * after some checkpoints, sometimes twice in a row (the first one's recovery may write entries again that the second
 * cuts). After each reopen every live snapshot has the rank, read level, level keeping it, raise positions and copy it
 * had after the checkpoint, and the join and move logs stay bounded.
 */
@Timeout(120)
class RandomRankLogHistoryTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(longs = {2}) // a history that rewrites both logs
    void aReopenReadsTheSameRaisesAndCopiesAndTheLogsStayBounded(long seed) throws IOException {
        String rewritten = history(seed, 8_000);
        assertTrue(rewritten.contains("joins") && rewritten.contains("moves"), "rewritten: " + rewritten);
    }

    @Tag("long")
    @ParameterizedTest
    @ValueSource(longs = {1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
    void moreSeeds(long seed) throws IOException {
        history(seed, 12_000);
    }

    private static RankTreePolicy policy(Random random) {
        return switch (random.nextInt(3)) {
            case 0 -> RankTreePolicy.levels(Retention.keepLast(1 + random.nextInt(4)), Retention.keepLast(4 + random.nextInt(8)), Retention.keepAll());
            case 1 -> RankTreePolicy.levels(Retention.keepLast(1 + random.nextInt(4)), Retention.keepLast(4 + random.nextInt(8)), Retention.keepLast(2),
                    Retention.keepAll());
            default -> RankTreePolicy.levels(Retention.keepLast(1 + random.nextInt(4)), Retention.keepLast(8), Retention.keepLast(1 + random.nextInt(3)),
                    Retention.keepAll());
        };
    }

    /** What a reopen must read back the same: per live snapshot, its record, read level and start, keeping level, raise positions. */
    private static Map<Long, String> state(SnapshotArchive archive) {
        SnapshotRegistry registry = field(archive, SnapshotArchive.class, "registry");
        JoinLog joins = field(registry, SnapshotRegistry.class, "joins");
        Map<Long, String> out = new LinkedHashMap<>();
        for (SnapshotRecord r : archive.snapshots())
            out.put(r.id(), r + " read " + registry.readLevel(r.id()) + "@" + registry.readStart(r) + " moved " + registry.movedTo(r.id()) + " kept "
                    + archive.keptAt(r.id()) + " joined " + Arrays.toString(joins.positions(r.id())));
        return out;
    }

    @SuppressWarnings("unchecked")
    private static <T> T field(Object o, Class<?> c, String name) {
        try {
            Field f = c.getDeclaredField(name);
            f.setAccessible(true);
            return (T) f.get(o);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    /** Runs the history of {@code seed}; returns which logs were rewritten ("joins", "moves"). */
    private String history(long seed, int steps) throws IOException {
        Random random = new Random(seed);
        RankTreePolicy policy = policy(random);
        int top = policy.levelCount();
        Path archiveDir = dir.resolve("archive");
        Path pages = dir.resolve("pages");
        // a raise writes one join per level; the logs keep the span since the checkpoint before the one that rewrote them
        long bound = MaplogDescriptor.entryOffset(4 * SnapshotRegistry.COMPACT_MIN_RECORDS + 64L * top);
        long lsn = 1;
        long checkpoint = 0;
        int reopens = 0;
        String rewritten = "";
        SnapshotArchive a = LogCompactionTest.open(FileIOFactory.standard(), archiveDir, pages, policy);
        try {
            a.recover(0, true);
            for (int step = 1; step <= steps; step++) {
                long id = a.nextId();
                a.declare(id, random.nextInt(400) == 0 ? top : 1, 1000 + id, lsn++);
                if (id == 1 || random.nextInt(300) == 0) a.rank(id, top - random.nextInt(2), lsn++); // kept for good, or nearly, raised
                if (random.nextInt(3) > 0 && a.find(id - 1) != null && a.find(id - 1).rank() == 1) a.rank(id - 1, 2, lsn++);
                if (random.nextInt(40) == 0) { // an older one raised again: raised then copied, copied then raised
                    List<SnapshotRecord> live = a.snapshots();
                    SnapshotRecord r = live.get(random.nextInt(live.size()));
                    if (r.rank() < top) a.rank(r.id(), r.rank() + 1, lsn++);
                }
                if (random.nextInt(8) > 0 && step != steps) continue;
                long mark = lsn; // the WAL position: the next record is written there
                checkpoint++;
                boolean quiet = random.nextBoolean() || step == steps; // else raises and declarations run beside the checkpoint
                a.onMark(checkpoint, mark);
                if (!quiet) lsn = beside(a, random, top, lsn);
                a.beforeStartMarker(checkpoint, mark);
                if (!quiet) lsn = beside(a, random, top, lsn);
                a.afterEndMarker(checkpoint, mark);
                if (random.nextInt(8) == 0) a.whileIdle(checkpoint, mark);
                if (!rewritten.contains("joins") && !Files.exists(archiveDir.resolve("joins.log"))) rewritten += "joins";
                if (!rewritten.contains("moves") && !Files.exists(archiveDir.resolve("moves.log"))) rewritten += "moves";
                Map<Long, String> before = state(a);
                if (!quiet || random.nextInt(20) != 0 && step != steps) continue;
                int times = random.nextInt(3) == 0 ? 2 : 1;
                for (int t = 0; t < times; t++) {
                    a.close();
                    a = LogCompactionTest.open(FileIOFactory.standard(), archiveDir, pages, policy);
                    a.recover(mark, false);
                    reopens++;
                    String at = "seed " + seed + " (" + policy + "), reopen " + (t + 1) + " after step " + step + ", mark " + mark;
                    assertEquals(before, state(a), at);
                    assertTrue(LogCompactionTest.bytesOf(archiveDir, "joins.log") <= bound, at + ": joins.log holds " + LogCompactionTest.bytesOf(archiveDir, "joins.log") + " bytes");
                    assertTrue(LogCompactionTest.bytesOf(archiveDir, "moves.log") <= bound, at + ": moves.log holds " + LogCompactionTest.bytesOf(archiveDir, "moves.log") + " bytes");
                }
            }
        } finally {
            a.close();
        }
        assertTrue(reopens > 3, "reopens: " + reopens);
        return rewritten;
    }

    /** Raises and declarations between a mark and its end marker: recovery from the mark cuts them, the next mark counts them. */
    private static long beside(SnapshotArchive a, Random random, int top, long lsn) {
        for (int k = random.nextInt(3); k > 0; k--) {
            List<SnapshotRecord> live = a.snapshots();
            SnapshotRecord r = live.get(random.nextInt(live.size()));
            if (r.rank() < top) a.rank(r.id(), r.rank() + 1, lsn++);
            else a.declare(a.nextId(), 1, 1000 + a.nextId(), lsn++);
        }
        return lsn;
    }
}
