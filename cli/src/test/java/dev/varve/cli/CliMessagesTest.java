package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.io.DirectoryFingerprint;
import dev.varve.engine.FixtureStores;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Refusals that say what is wrong, exit as the help says, and are made before anything changes. */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class CliMessagesTest {
    @TempDir
    static Path tmp;
    static Path healthy;

    @BeforeAll
    static void store() {
        healthy = tmp.resolve("healthy");
        FixtureStores.create(healthy, "healthy");
    }

    @Test
    void snapshotIdZeroOrNegativeIsABadCommandLine() {
        for (String id : new String[]{"0", "-1"}) {
            CliRun get = CliReadCommandsTest.unchanged(healthy, "get", healthy.toString(), "--table", "orders", "--as-of", id, "key-0001");
            assertEquals(Main.USAGE, get.code(), get.toString());
            assertTrue(get.err().contains("must be >= 1"), get.toString());
            CliRun backup = CliRun.of("backup", healthy.toString(), "--as-of", id, "--to", tmp.resolve("b" + id).toString());
            assertEquals(Main.USAGE, backup.code(), backup.toString());
            assertTrue(backup.err().contains("must be >= 1"), backup.toString());
        }
    }

    @Test
    void aMissingFileIsNamedWithWhatIsMissing() {
        CliRun dump = CliReadCommandsTest.unchanged(healthy, "dump", healthy.toString(), "--out", "/nonexistent/x.dump");
        assertEquals(Main.USAGE, dump.code(), dump.toString());
        assertTrue(dump.err().contains("cannot write /nonexistent/x.dump: no such directory"), dump.toString());

        CliRun info = CliRun.of("info", healthy.toString(), "--config", "/missing");
        assertEquals(Main.USAGE, info.code(), info.toString());
        assertTrue(info.err().contains("--config /missing: no such file"), info.toString());
        assertFalse(info.err().contains("Exception"), info.toString());
    }

    @Test
    void aFileSystemFailureSaysWhatWentWrong() {
        String m = Main.describe(new java.io.UncheckedIOException(new java.nio.file.NoSuchFileException("/nonexistent/x.dump")));
        assertTrue(m.contains("/nonexistent/x.dump: no such file or directory"), m);
        assertEquals("/x: permission denied", Main.describe(new java.nio.file.AccessDeniedException("/x")));
        // a wrapper that names the file already still says what went wrong with it: an unreadable pages/ directory
        // was reported as "cannot read the store's layout: /s/pages", without the permission denied the docs promise
        m = Main.describe(new dev.varve.core.io.StorageException("cannot read the store's layout: /s/pages", java.nio.file.Path.of("/s"),
                new java.nio.file.AccessDeniedException("/s/pages")));
        assertTrue(m.contains("/s/pages: permission denied"), m);
    }

    @Test
    void serveRefusesABindAddressBeforeOpeningTheStore() {
        Map<String, String> before = DirectoryFingerprint.of(healthy);
        CliRun r = CliRun.of("serve", healthy.toString(), "--bind", "0.0.0.0", "--port", "0");
        assertEquals(Main.USAGE, r.code(), r.toString());
        assertTrue(r.err().contains("--allow-remote"), r.toString());
        assertEquals(before, DirectoryFingerprint.of(healthy), "a refused serve changed the store");
    }
}
