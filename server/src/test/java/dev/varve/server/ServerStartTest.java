package dev.varve.server;

import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;
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

/** Starting a server that cannot start, or with options it cannot honour: a clear unchecked exception, and nothing left running. */
@Timeout(60)
@Isolated("waits until the JVM's non-daemon threads are those it had before: another class's would never end meanwhile")
class ServerStartTest {
    @TempDir
    Path dir;

    @Test
    void aBusyPortFailsNamingTheAddressAndLeavesNoThreadThatKeepsTheJvmAlive() throws Exception {
        Set<Thread> before = nonDaemonThreads();
        try (Varve store = Varve.open(SmallStore.config(dir).build());
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
        Varve.open(SmallStore.config(dir).build()).close();
        try (Varve store = Varve.openReadOnly(SmallStore.config(dir).build())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions().allowWrites(true)));
            assertTrue(e.getMessage().contains("read-only"), e.getMessage());
            try (VarveServer readOnly = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0))) {
                assertEquals(403, new HttpProbe(readOnly.address()).send("POST", "/api/snapshots").statusCode(), "served read-only, as asked");
            }
        }
    }

    /**
     * A closed store cannot be served: start refuses it, saying so (it started — the check it made, metrics(), answers
     * on a closed store — and its requests then failed on the closed store).
     */
    @Test
    void aClosedStoreIsRefusedAtStart() {
        Varve store = Varve.open(SmallStore.config(dir).build());
        store.close();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0)).close());
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }

    /**
     * A timeout or interval too long to count in nanoseconds (about 292 years), such as
     * {@code ChronoUnit.FOREVER.getDuration()} given for "never", is refused by the setter naming the option; it was
     * taken, and the server then failed at start or on every connection with a bare {@code ArithmeticException}.
     */
    @Test
    void aDurationTooLongToCountIsRefusedNamingTheOption() throws Exception {
        java.time.Duration forever = java.time.temporal.ChronoUnit.FOREVER.getDuration();
        java.util.Map<String, java.util.function.Consumer<java.time.Duration>> setters = new java.util.LinkedHashMap<>();
        ServerOptions o = new ServerOptions();
        setters.put("idleTimeout", o::idleTimeout);
        setters.put("requestTimeout", o::requestTimeout);
        setters.put("shipStallTimeout", o::shipStallTimeout);
        setters.put("sampleInterval", o::sampleInterval);
        setters.put("deadBytesInterval", o::deadBytesInterval);
        for (var s : setters.entrySet()) {
            for (java.time.Duration tooLong : new java.time.Duration[]{forever, java.time.Duration.ofDays(365L * 300)}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> s.getValue().accept(tooLong), s.getKey());
                assertTrue(e.getMessage().startsWith(s.getKey() + " "), e.getMessage());
            }
            s.getValue().accept(ServerOptions.MAX_DURATION); // the longest allowed is taken
        }
        // the sampler counts in milliseconds: a shorter interval was taken, and start failed on a zero delay
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> o.sampleInterval(java.time.Duration.ofNanos(500_000)));
        assertTrue(e.getMessage().startsWith("sampleInterval "), e.getMessage());
        try (Varve store = Varve.open(SmallStore.config(dir).build());
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), o)) {
            assertEquals(200, new HttpProbe(server.address()).get("/api/tables").statusCode(), "the longest durations serve");
        }
    }

    private static Set<Thread> nonDaemonThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive() && !t.isDaemon()).collect(Collectors.toSet());
    }
}
