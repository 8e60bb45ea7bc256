package dev.varve.server;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Starting a server that cannot start: a clear unchecked exception, and nothing left running. */
@Timeout(60)
class ServerStartTest {
    @TempDir
    Path dir;

    @Test
    void aBusyPortFailsNamingTheAddressAndLeavesNoThreadThatKeepsTheJvmAlive() throws Exception {
        Set<Thread> before = nonDaemonThreads();
        try (Varve store = Varve.open(VarveConfig.builder().path(dir).build());
             ServerSocket taken = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> VarveServer.start(store, new InetSocketAddress("127.0.0.1", port)));
            assertEquals("cannot bind 127.0.0.1:" + port + ": Address already in use", e.getMessage());
            // the store still serves, on another port
            try (VarveServer other = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0))) {
                assertEquals(200, new HttpProbe(other.address()).get("/api/tables").statusCode());
            }
        }
        // the failed server's event loops were shut down: their threads end (the @Timeout fails the test otherwise)
        while (!before.containsAll(nonDaemonThreads())) Thread.sleep(50);
    }

    /**
     * Writes allowed on a store opened read-only cannot be honoured: refused at start, naming why (the server started,
     * and each POST and follow then failed inside as an internal error, 500 without details).
     */
    @Test
    void writesAllowedOnAReadOnlyStoreAreRefusedAtStart() throws Exception {
        Varve.open(VarveConfig.builder().path(dir).build()).close();
        try (Varve store = Varve.openReadOnly(VarveConfig.builder().path(dir).build())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions().allowWrites(true)));
            assertTrue(e.getMessage().contains("read-only"), e.getMessage());
            try (VarveServer readOnly = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0))) {
                assertEquals(403, new HttpProbe(readOnly.address()).send("POST", "/api/snapshots").statusCode(), "served read-only, as asked");
            }
        }
    }

    private static Set<Thread> nonDaemonThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive() && !t.isDaemon()).collect(Collectors.toSet());
    }
}
