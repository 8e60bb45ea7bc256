package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.DirectoryFingerprint;
import dev.varve.core.io.StorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code path} and {@code archivePath} as the file system resolves them. The configuration's own check compares the
 * paths as written, so an archive reached through a symbolic link could land inside the store's {@code pages/} or
 * {@code wal/}, be the store directory itself, or hold it: such an open was accepted (the archive's logs then sat
 * among the page files), or refused with "already open in this JVM" or "cannot list the archive ... Is a directory"
 * after it had made the store's lock file and {@code checkpoints/}. A symbolic link to a directory elsewhere, the way
 * operators put the archive on another disk, is fine.
 */
@Timeout(60)
class SymlinkedPathsTest {
    @TempDir
    Path dir;

    @Test
    void anArchiveLinkedIntoTheStoresPagesOrWalIsRefusedBeforeAnythingIsMade() throws IOException {
        for (String own : new String[]{"pages", "wal"}) {
            Path store = Files.createDirectories(dir.resolve("store-" + own).resolve(own));
            Path link = Files.createSymbolicLink(dir.resolve("link-" + own), store);
            Map<String, String> before = DirectoryFingerprint.of(store.getParent());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Varve.open(FixtureSupport.small(store.getParent()).archivePath(link).build()));
            assertTrue(e.getMessage().contains("symbolic links") && e.getMessage().contains(own), e.getMessage());
            assertEquals(before, DirectoryFingerprint.of(store.getParent()), "the refused open changed the store directory");
        }
    }

    /** {@code link/..} is the parent of the link's target, as the OS resolves it, not the directory that holds the link. */
    @Test
    void aDotDotAfterALinkIsResolvedAsTheFileSystemDoes() throws IOException {
        Path store = dir.resolve("store");
        Path sub = Files.createDirectories(store.resolve("pages").resolve("sub"));
        Path link = Files.createSymbolicLink(dir.resolve("link"), sub);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Varve.open(FixtureSupport.small(store).archivePath(link.resolve("..").resolve("arc")).build()));
        assertTrue(e.getMessage().contains("symbolic links") && e.getMessage().contains("pages"), e.getMessage());
        assertFalse(Files.exists(store.resolve("varve.lock")), "the refused open locked the store");
    }

    @Test
    void anArchiveThatIsTheStoreDirectoryThroughALinkIsRefused() throws IOException {
        Path store = Files.createDirectories(dir.resolve("store"));
        Path link = Files.createSymbolicLink(dir.resolve("link"), store);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Varve.open(FixtureSupport.small(store).archivePath(link).build()));
        assertTrue(e.getMessage().contains("symbolic links") && e.getMessage().contains("differ"), e.getMessage());
        try (var s = Files.list(store)) {
            assertEquals(0, s.count(), "the refused open made directories in " + store);
        }
    }

    @Test
    void aStoreLinkedInsideItsArchiveIsRefused() throws IOException {
        Path archive = Files.createDirectories(dir.resolve("archive"));
        Path inside = Files.createDirectories(archive.resolve("store"));
        Path link = Files.createSymbolicLink(dir.resolve("link"), inside);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Varve.open(FixtureSupport.small(link).archivePath(archive).build()));
        assertTrue(e.getMessage().contains("symbolic links") && e.getMessage().contains("contain"), e.getMessage());
        assertFalse(Files.exists(archive.resolve("varve.lock")), "the refused open locked the archive");
        assertFalse(Files.exists(inside.resolve("checkpoints")), "the refused open made the store's checkpoints directory");
    }

    @Test
    void anArchiveOnAnotherDirectoryThroughALinkAndAStoreReachedThroughALinkWork() throws IOException {
        Path elsewhere = Files.createDirectories(dir.resolve("other disk ü"));
        Path store = Files.createDirectories(dir.resolve("store"));
        Files.createSymbolicLink(store.resolve("archive"), elsewhere); // the default archivePath, linked away
        Path storeLink = Files.createSymbolicLink(dir.resolve("store link"), store);
        VarveConfig viaLink = FixtureSupport.small(storeLink).build();
        long snapshot;
        try (Varve v = Varve.open(viaLink)) {
            v.table("t").put(utf8("k"), utf8("old"));
            snapshot = v.snapshotNow();
            v.table("t").put(utf8("k"), utf8("new"));
            // the same directory by its real path is the same store: refused while open
            assertThrows(IllegalStateException.class, () -> Varve.open(FixtureSupport.small(store).build()));
        }
        assertTrue(Files.exists(elsewhere.resolve("snapshots.log")), "the archive went through the link");
        for (boolean readOnly : new boolean[]{true, false}) {
            VarveConfig real = FixtureSupport.small(store).build();
            try (Varve v = readOnly ? Varve.openReadOnly(real) : Varve.open(real); SnapshotView past = v.asOf(snapshot)) {
                assertArrayEquals(utf8("new"), v.table("t").get(utf8("k")));
                assertArrayEquals(utf8("old"), past.table("t").get(utf8("k")));
            }
        }
    }

    /** A store or archive linked to a disk that is not mounted: said so, and nothing is made where the link points. */
    @Test
    void aLinkToADirectoryThatIsNotThereIsNamedAsSuch() throws IOException {
        Path target = dir.resolve("mnt").resolve("disk2").resolve("varve");
        Path link = Files.createSymbolicLink(dir.resolve("store"), target);
        StorageException e = assertThrows(StorageException.class, () -> Varve.open(FixtureSupport.small(link).build()));
        assertTrue(e.getMessage().contains("symbolic link to " + target) && e.getMessage().contains("store directory"), e.getMessage());
        Path archiveLink = Files.createSymbolicLink(dir.resolve("archive"), target);
        Path fresh = dir.resolve("fresh");
        e = assertThrows(StorageException.class, () -> Varve.open(FixtureSupport.small(fresh).archivePath(archiveLink).build()));
        assertTrue(e.getMessage().contains("symbolic link to " + target) && e.getMessage().contains("archive directory"), e.getMessage());
        assertFalse(Files.exists(dir.resolve("mnt")), "the refused opens made the link's target");
        assertFalse(Files.exists(fresh), "the refused open made the store's directory");
    }
}
