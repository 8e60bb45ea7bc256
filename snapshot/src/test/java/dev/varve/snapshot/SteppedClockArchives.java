package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;

import java.nio.file.Path;
import java.util.function.LongSupplier;

/** Archives whose retention policy reads a wall clock the test steps, and checkpoint marks taken by hand. */
final class SteppedClockArchives {
    private SteppedClockArchives() {
    }

    /**
     * Opens the archive in {@code dir} under {@code policy}, reading {@code wall}. No archiver thread: its check would
     * read the stepped clock whenever its period came round; the checks are the test's own ({@link SnapshotArchive#enforce}),
     * and a checkpoint steps the archiver on the caller's thread.
     */
    static SnapshotArchive open(Path dir, RankTreePolicy policy, LongSupplier wall) {
        SnapshotArchive a = new SnapshotArchive(FileIOFactory.standard(), ArchiveSettings.builder(dir, policy).pageSize(4096)
                .skippyLevels(policy.levelCount()).skippyNodeEntries(16).captureBufferBytes(1L << 20).segmentBytes(256L << 10)
                .pageWindow(0).build());
        a.useAgents(Agents.invoked());
        a.wallClock(wall);
        return a;
    }

    /** A checkpoint whose mark, start marker and end marker are all at {@code lsn}. */
    static void mark(SnapshotArchive a, long lsn) {
        a.onMark(lsn, lsn);
        a.beforeStartMarker(lsn, lsn);
        a.afterEndMarker(lsn, lsn);
    }
}
