package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Files that are not the store's, left in its directories by people and their tools: a README, a Finder's
 * .DS_Store, lost+found, an editor's swap and backup files. Open reads past them and leaves them alone, and so must
 * the offline check: it took any archive file whose name held ".log" for a Maplog, and reported a sound store's
 * {@code .snapshots.log.swp} or {@code snapshots.log~} as damage. And an archive directory given its own disk is that
 * disk's root, with lost+found in it (and maybe a README): the first open took every entry there for an archive file
 * a crash had left, and refused the store ("cannot list the archive: lost+found: Is a directory", or "the archive's
 * checkpoint marks are missing, but README holds records"), at every open.
 */
@Timeout(60)
class StrayFilesTest {
    @TempDir
    Path dir;

    @Test
    void strayFilesAreNeitherDamageNorTouched() throws IOException {
        Path store = dir.resolve("store");
        VarveConfig config = FixtureSupport.small(store).build();
        long snapshot;
        try (Varve v = Varve.open(config)) {
            v.table("t").put(utf8("k"), utf8("old"));
            snapshot = v.snapshotNow();
            v.table("t").put(utf8("k"), utf8("new"));
        }
        Files.createDirectories(store.resolve("lost+found"));
        List<Path> stray = List.of(store.resolve("README"), store.resolve(".DS_Store"), store.resolve("pages/.DS_Store"),
                store.resolve("pages/.t00001-p00000.page.swp"), store.resolve("wal/.wal-0000000000000000.seg.swp"), store.resolve("wal/README"),
                store.resolve("checkpoints/.notes.swp"), store.resolve("archive/README"), store.resolve("archive/.snapshots.log.swp"),
                store.resolve("archive/snapshots.log~"), store.resolve("archive/drops.log.orig"),
                store.resolve("archive/level-1/.pagelog-00000000.log.swp"), store.resolve("archive/level-1/maplog-L0.log.bak"));
        for (Path p : stray) Files.writeString(p, "not the store's");

        StoreVerifier.Report report = StoreVerifier.verify(config);
        assertNull(report.unusable());
        assertEquals(List.of(), report.damage(), "the stray files are no damage");
        for (boolean readOnly : new boolean[]{true, false}) {
            try (Varve v = readOnly ? Varve.openReadOnly(config) : Varve.open(config); SnapshotView past = v.asOf(snapshot)) {
                assertArrayEquals(utf8("new"), v.table("t").get(utf8("k")));
                assertArrayEquals(utf8("old"), past.table("t").get(utf8("k")));
                if (!readOnly) v.table("t").put(utf8("k2"), utf8("v2"));
            }
        }
        for (Path p : stray) assertEquals("not the store's", Files.readString(p), p.toString());
        assertTrue(Files.isDirectory(store.resolve("lost+found")));
    }

    @Test
    void anArchiveOnItsOwnDisksRootOpens() throws IOException {
        Path disk = Files.createDirectories(dir.resolve("disk2"));
        Files.createDirectories(disk.resolve("lost+found"));
        Files.writeString(disk.resolve("README"), "this disk holds the archive of the orders store, do not delete");
        VarveConfig config = FixtureSupport.small(dir.resolve("store")).archivePath(disk).build();
        long snapshot;
        try (Varve v = Varve.open(config)) {
            v.table("t").put(utf8("k"), utf8("old"));
            snapshot = v.snapshotNow();
            v.table("t").put(utf8("k"), utf8("new"));
        }
        try (Varve v = Varve.open(config); SnapshotView past = v.asOf(snapshot)) {
            assertArrayEquals(utf8("old"), past.table("t").get(utf8("k")));
        }
        assertEquals(List.of(), StoreVerifier.verify(config).damage());
        assertTrue(Files.isDirectory(disk.resolve("lost+found")) && Files.exists(disk.resolve("README")));
    }

    /**
     * An operator's copy of a page file beside it, under a name of its own ("t00001-p00000 copy.page", as a file
     * manager names a copy): open lists the page files to check their generations, and took every name starting with
     * "t" and ending in ".page" for one, so the store was refused ("cannot list page files: For input string") at
     * every open where it had opened before, and a writable open refused it too when this user may not write the copy;
     * it is not the store's file, and is neither read nor touched.
     */
    @Test
    void anOperatorsCopyOfAPageFileIsNotTheStoresFile() throws IOException {
        Path store = dir.resolve("store");
        VarveConfig config = FixtureSupport.small(store).build();
        try (Varve v = Varve.open(config)) {
            v.table("t").put(utf8("k"), utf8("v"));
        }
        Path original = FixtureSupport.pageFile(store, 1, 0);
        List<Path> copies = List.of(original.resolveSibling("t00001-p00000 copy.page"), original.resolveSibling("t00001-p00000.old.page"),
                original.resolveSibling("tmp.page"));
        byte[] copied = Files.readAllBytes(original);
        for (Path p : copies) Files.copy(original, p);
        assertEquals(List.of(), StoreVerifier.verify(config).damage());
        // the copies are the operator's (made as root for a service that runs as another user): a writable open, which
        // checks it may write every page file before its first write, must not ask for them (denial injected: tests run as root)
        ForwardingFileIOFactory copiesDenied = new ForwardingFileIOFactory() {
            @Override
            public FileIO open(Path file, boolean create) throws IOException {
                if (copies.contains(file)) throw new AccessDeniedException(file.toString());
                return super.open(file, create);
            }
        };
        for (boolean readOnly : new boolean[]{true, false}) {
            try (Varve v = readOnly ? Varve.openReadOnly(config) : Varve.open(config, copiesDenied)) {
                assertArrayEquals(utf8("v"), v.table("t").get(utf8("k")));
            }
        }
        for (Path p : copies) assertArrayEquals(copied, Files.readAllBytes(p), p.toString());
    }
}
