package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.DirectoryFingerprint;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.io.StorageException;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Path;
import java.util.Map;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A page file this user may not write (a store restored by root for a service that runs as another user, one file
 * left read-only): page files are opened when a page of theirs is first read, so a writable open of a crashed store
 * found out in the middle of recovery, after it had cut the archive back to its mark — a refused open that changed
 * the store. It is now refused before the first write, naming the file. So is the archive's retention policy file,
 * which open rewrites once recovery is done. (Tests run as root, whom chmod does not stop:
 * the denial is injected where the file is opened.)
 */
@Timeout(60)
class UnwritableFilesTest {
    @TempDir
    Path dir;

    /** A page file, and the archive's retention policy file, which open records the policy in once recovery is done. */
    @ParameterizedTest
    @ValueSource(strings = {"pages/t00001-p00003.page", "archive/retention.policy"})
    void aFileThatCannotBeWrittenRefusesTheOpenBeforeRecoveryChangesAnything(String file) throws IOException {
        Path store = dir.resolve("store");
        VarveConfig config = FixtureSupport.small(store).build();
        try (Varve v = Varve.open(config)) {
            for (int i = 0; i < 200; i++) v.table("t").put(utf8("k" + i), utf8("v" + i));
            v.snapshotNow();
            v.table("t").put(utf8("k1"), utf8("checkpointed"));
        }
        Varve crashed = Varve.open(config);
        for (int i = 0; i < 200; i++) crashed.table("t").put(utf8("k" + i), utf8("after" + i));
        crashed.snapshotNow();
        crashed.table("t").put(utf8("k1"), utf8("last"));
        crashed.halt();

        Path denied = store.resolve(file);
        assertTrue(java.nio.file.Files.exists(denied));
        Map<String, String> before = DirectoryFingerprint.of(store);
        StorageException e = assertThrows(StorageException.class, () -> Varve.open(config, new ForwardingFileIOFactory() {
            @Override
            public FileIO open(Path file, boolean create) throws IOException {
                if (file.equals(denied)) throw new AccessDeniedException(file.toString());
                return super.open(file, create);
            }
        }));
        assertEquals(denied, e.file(), e.getMessage());
        assertInstanceOf(AccessDeniedException.class, e.getCause());
        assertEquals(before, DirectoryFingerprint.of(store), "the refused open changed the store");
        try (Varve v = Varve.open(config)) {
            assertArrayEquals(utf8("last"), v.table("t").get(utf8("k1")));
            assertArrayEquals(utf8("after199"), v.table("t").get(utf8("k199")));
        }
    }
}
