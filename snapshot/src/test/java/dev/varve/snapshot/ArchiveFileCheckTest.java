package dev.varve.snapshot;

import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The offline archive check agrees with open about a crash cut into a file's creation: the temp file left before the
 * rename (empty, or holding part of a header) is no damage — open deletes it — while the same bytes under a real
 * segment name are.
 */
@Timeout(60)
class ArchiveFileCheckTest {
    @TempDir
    Path dir;

    @Test
    void aCreationCutShortBeforeItsRenameIsNotDamage() throws IOException {
        for (int j = 1; j <= 2; j++) Files.createDirectories(dir.resolve("level-" + j));
        Path level = Files.createDirectories(dir.resolve("level-3")); // a level made at a raise, as in the crash CI saw
        Files.write(level.resolve(PagelogDescriptor.fileName(1) + ".creating"), new byte[0]);
        List<String> damage = new ArrayList<>();
        ArchiveFileCheck.check(FileIOFactory.standard(), dir, 4096, (file, offset, what) -> damage.add(file + ": " + what));
        assertEquals(List.of(), damage);

        Files.write(level.resolve(PagelogDescriptor.fileName(2)), new byte[0]);
        ArchiveFileCheck.check(FileIOFactory.standard(), dir, 4096, (file, offset, what) -> damage.add(file + ": " + what));
        assertEquals(1, damage.size(), damage.toString());
        assertTrue(damage.get(0).contains("header truncated"), damage.get(0));
    }

    /**
     * The names the archive gives its files, and names that are not its own (an archive on its own disk's root, an
     * editor's copies): a check that took {@code maplog-L0.log} for a foreign name, as a lower-case pattern did,
     * stopped checking the Maplogs and let an archive without marks pass with Maplog records in it.
     */
    @Test
    void theArchivesOwnFileNamesAndNoOthers() {
        for (String own : List.of("maplog-L0.log", "maplog-L2.log.16384", "skippy-uplinks-L1.log", "skippy-uplinks-L0.log.8192",
                PagelogDescriptor.fileName(3), RankedExtentDescriptor.fileName(7), "snapshots.log", "drops.log.4096", "archive-marks.log"))
            assertTrue(ArchiveFileCheck.isArchiveFile(own), own);
        for (String foreign : List.of(".maplog-L0.log.swp", "snapshots.log~", "drops.log.orig", "maplog-L0.log.bak", "README", "lost+found",
                "varve.lock", RetentionFileDescriptor.FILE, ".DS_Store"))
            assertTrue(!ArchiveFileCheck.isArchiveFile(foreign), foreign);
    }
}
