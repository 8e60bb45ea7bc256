package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static dev.varve.engine.LogCompactionRanksTest.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Random histories through the store that raise most snapshots (a page window of 0: the next checkpoint copies
 * them) under a policy whose top level keeps for good, with snapshot 1 raised there right after its write: crashes
 * or closes followed by reopens in either recovery mode, replaying the raises made since the mark. After each reopen
 * the live snapshots and their ranks are those before, each reads as of its own write, and the join and move logs
 * stay bounded.
 */
@Timeout(300)
class RandomRaiseHistoryTest {
    private static final int KEYS = 20;

    @TempDir
    Path tmp;

    @ParameterizedTest
    @ValueSource(longs = {1})
    void aReopenReadsEveryRaisedSnapshotAsOfItsWrite(long seed) {
        assertTrue(history(seed, 3000), "joins.log was rewritten");
    }

    @Tag("long")
    @ParameterizedTest
    @ValueSource(longs = {2, 3, 4, 5, 6})
    void moreSeeds(long seed) {
        history(seed, 8000);
    }

    private static String valueAsOf(long id, int m) {
        long j = id - Math.floorMod(id - m, KEYS);
        return j >= 1 ? "v" + j : null;
    }

    private static long bytesOf(Path archiveDir, String prefix) {
        try (Stream<Path> files = Files.list(archiveDir)) {
            return files.filter(p -> p.getFileName().toString().startsWith(prefix)).mapToLong(p -> p.toFile().length()).sum();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Runs the history of {@code seed}; returns whether a reopen found joins.log rewritten (renamed after its first entry held). */
    private boolean history(long seed, int steps) {
        boolean rewritten = false;
        Random random = new Random(seed);
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepLast(1 + random.nextInt(3)), Retention.keepLast(2 + random.nextInt(8)), Retention.keepAll());
        Path dir = tmp.resolve("store");
        java.util.function.Function<RecoveryMode, VarveConfig> config =
                mode -> LogCompactionRanksTest.config(dir, "levels", mode).toBuilder().retention(policy).snapshotPageWindow(0).build();
        Varve s = Varve.open(config.apply(RecoveryMode.CHECKPOINT_RECOVERY_FILE));
        try {
            for (long i = 1; i <= steps; i++) {
                long n = i;
                assertEquals(i, s.writeAndSnapshot(b -> b.put("t", utf8("k" + (n % KEYS)), utf8("v" + n)), 1));
                if (i == 1 || random.nextInt(500) == 0) s.rank(i, 3);
                else if (random.nextInt(3) > 0) s.rank(i, 2); // the next checkpoint copies it into level 2 while it lives
                if (random.nextInt(60) == 0) {
                    List<SnapshotInfo> live = s.snapshots();
                    SnapshotInfo r = live.get(random.nextInt(live.size()));
                    if (r.rank() < 3) s.rank(r.id(), r.rank() + 1);
                }
                if (random.nextInt(25) == 0) s.checkpoint().join();
                if (random.nextInt(300) != 0 && i != steps) continue;
                List<SnapshotInfo> before = s.snapshots();
                boolean crash = random.nextBoolean();
                if (crash) s.halt();
                else s.close();
                RecoveryMode mode = random.nextBoolean() ? RecoveryMode.WAL_PHYSICAL : RecoveryMode.CHECKPOINT_RECOVERY_FILE;
                s = Varve.open(config.apply(mode));
                String at = "seed " + seed + " (" + policy + "), " + (crash ? "crash" : "close") + " after " + i + ", reopened in " + mode;
                assertEquals(before.stream().map(x -> x.id() + "@" + x.rank()).toList(), s.snapshots().stream().map(x -> x.id() + "@" + x.rank()).toList(), at);
                assertReads(s, at);
                long bound = 3 * 32 * 4096 + 4096;
                Path archive = dir.resolve("archive");
                assertTrue(bytesOf(archive, "joins.log") <= bound, at + ": joins.log holds " + bytesOf(archive, "joins.log"));
                assertTrue(bytesOf(archive, "moves.log") <= bound, at + ": moves.log holds " + bytesOf(archive, "moves.log"));
                rewritten |= !Files.exists(archive.resolve("joins.log"));
            }
        } finally {
            s.close();
        }
        return rewritten;
    }

    private static void assertReads(Varve s, String at) {
        List<Long> live = new ArrayList<>();
        for (SnapshotInfo i : s.snapshots()) live.add(i.id());
        for (long id : live)
            try (SnapshotView v = s.asOf(id)) {
                for (int m = 0; m < KEYS; m++) {
                    String want = valueAsOf(id, m);
                    byte[] got = v.table("t").get(utf8("k" + m));
                    if (want == null) assertEquals(null, got, at + ": snapshot " + id + " key k" + m);
                    else assertArrayEquals(utf8(want), got, at + ": snapshot " + id + " key k" + m);
                }
            }
    }
}
