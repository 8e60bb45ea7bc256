package dev.varve.server;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The serve and backup commands as an operator runs them. */
@Timeout(180)
class ServerMainTest {
    @TempDir
    Path dir;

    @Test
    void badUsageExitsTwoAndSaysWhy() throws Exception {
        assertUsage("no command given");
        assertUsage("unknown command frob", "frob");
        assertUsage("missing option --from", "backup", "--as-of", "1", "--to", dir.toString());
        assertUsage("either --as-of ID or --follow", "backup", "--from", "127.0.0.1:1", "--as-of", "1", "--follow", "--to", dir.toString());
        assertUsage("HOST:PORT", "backup", "--from", "nohost", "--as-of", "1", "--to", dir.toString());
        assertUsage("unknown option --bogus", "serve", dir.toString(), "--bogus");
        assertUsage("--as-of is not a number", "backup", "--from", "127.0.0.1:1", "--as-of", "x", "--to", dir.toString());
    }

    @Test
    @Timeout(180)
    void serveInOneProcessBackupInAnother() throws Exception {
        Path source = dir.resolve("source");
        Workload w = new Workload(3, 500);
        long id;
        try (Varve store = Varve.open(VarveConfig.builder().path(source).build())) {
            w.createTables(store);
            for (int i = 0; i < 600; i++) w.step(store);
            id = store.snapshotNow();
        }
        try (ChildJvm server = ChildJvm.start(ServerMain.class, "serve", source.toString(), "--port", "0")) {
            String line = server.awaitLine("serving", 120);
            assertTrue(line.endsWith("(read-only)"), line);
            int port = Integer.parseInt(line.replaceAll(".*:(\\d+) .*", "$1"));
            assertEquals(200, new HttpProbe(new InetSocketAddress("127.0.0.1", port)).get("/metrics").statusCode());
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            int rc = ServerMain.run(new String[]{"backup", "--from", "127.0.0.1:" + port, "--as-of", Long.toString(id), "--to",
                    dir.resolve("copy").toString()}, new PrintStream(out, true, StandardCharsets.UTF_8), System.err);
            assertEquals(0, rc, out.toString(StandardCharsets.UTF_8));
            assertTrue(out.toString(StandardCharsets.UTF_8).contains("backup of snapshot " + id + " complete"));
            assertEquals(143, server.terminate(), "SIGTERM (128 + 15) ends the server through its shutdown hook");
        }
        StoreAssert.assertStoreEquals(w.snapshot(), dir.resolve("copy"));
        try (Varve reopened = Varve.open(VarveConfig.builder().path(source).build())) {
            assertEquals(id, reopened.snapshots().get(0).id());
            assertEquals(0, reopened.recoveryReport().replayedRecords(), "the hook closed the store cleanly: " + reopened.recoveryReport());
        }
    }

    private static void assertUsage(String expected, String... args) throws Exception {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = ServerMain.run(args, System.out, new PrintStream(err, true, StandardCharsets.UTF_8));
        String text = err.toString(StandardCharsets.UTF_8);
        assertEquals(2, rc, text);
        assertTrue(text.contains(expected), text);
        assertTrue(text.contains("usage:"), text);
    }
}
