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
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

import static dev.varve.engine.LogCompactionRanksTest.utf8;
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
    @TempDir
    Path tmp;

    @ParameterizedTest
    @ValueSource(longs = {1})
    void aReopenReadsEveryRaisedSnapshotAsOfItsWrite(long seed) throws IOException {
        assertTrue(history(seed, 3000), "joins.log was rewritten");
    }

    @Tag("long")
    @ParameterizedTest
    @ValueSource(longs = {2, 3, 4, 5, 6})
    void moreSeeds(long seed) throws IOException {
        history(seed, 8000);
    }

    /** Runs the history of {@code seed}; returns whether a reopen found joins.log rewritten (renamed after its first entry held). */
    private boolean history(long seed, int steps) throws IOException {
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
                assertEquals(i, s.writeAndSnapshot(b -> b.put("t", utf8("k" + (n % RandomRetentionHistoryTest.KEYS)), utf8("v" + n)), 1));
                if (i == 1 || random.nextInt(500) == 0) s.rank(i, 3);
                else if (random.nextInt(3) > 0) s.rank(i, 2); // the next checkpoint copies it into level 2 while it lives
                if (random.nextInt(60) == 0) {
                    List<SnapshotInfo> live = s.snapshots();
                    SnapshotInfo r = live.get(random.nextInt(live.size()));
                    if (r.rank() < 3) s.rank(r.id(), r.rank() + 1);
                }
                if (random.nextInt(25) == 0) s.checkpoint().join();
                if (random.nextInt(300) != 0 && i != steps) continue;
                List<String> before = s.snapshots().stream().map(x -> x.id() + "@" + x.rank()).toList();
                String at = "seed " + seed + " (" + policy + "), " + (random.nextBoolean() ? "crash" : "close") + " after " + i;
                if (at.contains("crash")) s.halt(); // the raises since the mark are replayed from the WAL
                else s.close();
                s = Varve.open(config.apply(RecoveryMode.values()[random.nextInt(RecoveryMode.values().length)]));
                assertEquals(before, s.snapshots().stream().map(x -> x.id() + "@" + x.rank()).toList(), at);
                RandomRetentionHistoryTest.assertReads(s, i, at);
                long bound = 3 * 32 * 4096 + 4096;
                Path archive = dir.resolve("archive");
                assertTrue(LogCompactionKillTest.bytesOf(archive, "joins.log") <= bound, at + ": joins.log holds " + LogCompactionKillTest.bytesOf(archive, "joins.log"));
                assertTrue(LogCompactionKillTest.bytesOf(archive, "moves.log") <= bound, at + ": moves.log holds " + LogCompactionKillTest.bytesOf(archive, "moves.log"));
                rewritten |= !Files.exists(archive.resolve("joins.log"));
            }
        } finally {
            s.close();
        }
        return rewritten;
    }
}
