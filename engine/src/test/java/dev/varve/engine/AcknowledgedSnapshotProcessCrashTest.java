package dev.varve.engine;

import dev.varve.config.WalSyncMode;
import dev.varve.engine.SnapshotCrashRun.Load;
import dev.varve.engine.SnapshotCrashRun.Run;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;

/**
 * Under {@code LOG_ONLY}, a process crash at the n-th file operation after a {@code snapshotNow},
 * {@code writeAndSnapshot} or {@code rank} returned, with three writers committing alongside: the process's writes all
 * stay (as the page cache keeps them for the next process after a kill -9), and every returned snapshot reads exactly
 * as before, every returned raise is kept ({@link SnapshotCrashRun}; every crash point up to 150:
 * {@link AcknowledgedSnapshotEveryCrashPointTest}). The loads cross WAL segment switches and checkpoints, and a full
 * capture buffer, and keepLast windows that drop older snapshots.
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
}
