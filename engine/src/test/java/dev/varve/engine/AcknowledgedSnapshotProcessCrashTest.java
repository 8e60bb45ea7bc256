package dev.varve.engine;

import dev.varve.config.WalSyncMode;
import dev.varve.engine.SnapshotCrashRun.Load;
import dev.varve.engine.SnapshotCrashRun.Run;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;

/**
 * Under {@code LOG_ONLY}, a process crash at the n-th file operation after a {@code snapshotNow},
 * {@code writeAndSnapshot} or {@code rank} returned, with three writers committing alongside: the process's writes all
 * stay (as the page cache keeps them for the next process after a kill -9), and every returned snapshot reads exactly
 * as before, every returned raise is kept ({@link SnapshotCrashRun}). The loads cross WAL segment switches and
 * checkpoints, and a full capture buffer.
 */
@Timeout(300)
class AcknowledgedSnapshotProcessCrashTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(Load.class)
    void everyReturnedSnapshotAndRaiseSurvivesAProcessCrash(Load load) throws Exception {
        for (int point : SnapshotCrashRun.POINTS) new Run(dir, load, WalSyncMode.LOG_ONLY, point, false).crashAndCheck();
    }

    /** Every file operation of the first 150 after the arming call (run with -Plong). */
    @Tag("long")
    @ParameterizedTest
    @EnumSource(Load.class)
    void everyCrashPointKeepsEveryReturnedSnapshotAndRaise(Load load) throws Exception {
        for (int point = 1; point <= 150; point++) new Run(dir, load, WalSyncMode.LOG_ONLY, point, false).crashAndCheck();
    }
}
