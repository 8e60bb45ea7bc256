package dev.varve.cli;

import dev.varve.core.io.CorruptionException;
import dev.varve.engine.StoreInspector;
import dev.varve.engine.Varve;
import dev.varve.server.ServerOptions;
import dev.varve.server.VarveServer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/**
 * {@code varve serve DIR [--port N]}: opens the store (read-write: it keeps working as the server's store) and serves
 * it on one port until the process is stopped; SIGTERM or Ctrl-C close the server and then the store cleanly.
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = {"Opens the store and serves it on one TCP port until stopped (Ctrl-C or SIGTERM close it cleanly): snapshot shipping "
                + "for `varve backup --from`, Prometheus metrics at /metrics, a JSON API under /api/ and a dashboard at /. Read-only "
                + "and bound to 127.0.0.1 unless told otherwise."})
final class ServeCommand implements Callable<Integer> {
    @Mixin
    StoreOptions store;

    @Option(names = "--port", paramLabel = "N", defaultValue = "7070", description = "The port (default ${DEFAULT-VALUE}; 0 picks a free one).")
    int port;

    @Option(names = "--bind", paramLabel = "ADDRESS", defaultValue = "127.0.0.1", description = "The address to listen on (default ${DEFAULT-VALUE}).")
    String bind;

    @Option(names = "--allow-remote", description = "Allow binding an address other than loopback.")
    boolean allowRemote;

    @Option(names = "--allowed-host", paramLabel = "NAME",
            description = "A host name the admin endpoint answers to besides IP addresses and localhost (repeatable): the name Prometheus or a "
                    + "browser uses to reach it. Requests naming other hosts get 403, against DNS rebinding.")
    List<String> allowedHosts = new ArrayList<>();

    @Option(names = "--allow-writes",
            description = "Allow what writes: declaring snapshots and raising ranks over the API, and follow mode (it declares a snapshot).")
    boolean allowWrites;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        if (port < 0 || port > 65535) throw new IllegalArgumentException("--port must be 0..65535, was " + port);
        InetSocketAddress address = new InetSocketAddress(bind, port);
        // before the store is opened, so a refused command leaves it untouched; the server's own refusal would name
        // its Java option, not this flag
        if (address.isUnresolved()) throw new IllegalArgumentException("--bind " + bind + " is not an address this host can resolve");
        if (!allowRemote && !address.getAddress().isLoopbackAddress())
            throw new IllegalArgumentException("--bind " + bind + " is not a loopback address; allow it with --allow-remote");
        for (String name : allowedHosts) { // the server's refusal would name its Java option, not this flag
            try {
                new ServerOptions().allowedHosts(name);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--allowed-host '" + name + "' is not a host name (give the name alone, without scheme or port)", e);
            }
        }
        refuseDamagedPolicy();
        refuseBusy(address);
        StoreInspector.requireStore(store.dir, "; serve opens a store, it does not create one"); // --config would create one
        ServerOptions options = new ServerOptions().allowWrites(allowWrites).allowNonLoopback(allowRemote)
                .allowedHosts(allowedHosts.toArray(String[]::new));
        Varve s = Varve.open(store.config());
        VarveServer server;
        try {
            server = VarveServer.start(s, address, options);
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close();
            s.close();
            stopped.countDown();
        }, "varve-serve-shutdown"));
        InetSocketAddress at = server.address();
        PrintWriter out = spec.commandLine().getOut();
        out.println("serving " + store.dir + " on " + at.getHostString() + ":" + at.getPort() + (allowWrites ? " (writes allowed)" : " (read-only)"));
        out.flush();
        stopped.await();
        return Main.OK;
    }

    /**
     * Refuses an address another process listens on, before the store is opened for writing (its recovery and a
     * checkpoint would otherwise run for a server that cannot start). The server binds it again a moment later.
     */
    private static void refuseBusy(InetSocketAddress address) {
        if (address.getPort() == 0) return;
        try (ServerSocket probe = new ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(address);
        } catch (IOException e) {
            throw new UnusableStoreException("cannot listen on " + address.getHostString() + ":" + address.getPort() + ": " + e.getMessage(), e);
        }
    }

    /**
     * A writable open records the retention policy it runs under. Without {@code --config} that policy is the one the
     * store recorded; when that file is damaged the layout falls back to keeping every snapshot, and serving would
     * write that guess over the store's real policy, so serve refuses instead (the read-only commands carry on).
     */
    private void refuseDamagedPolicy() {
        if (store.layout.config != null) return;
        try {
            StoreInspector.recordedRetention(store.layout.archiveOf(store.dir));
        } catch (CorruptionException e) {
            throw new UnusableStoreException("serve opens " + store.dir + " for writing, which records its retention policy, and the recorded one is "
                    + "damaged (" + e.getMessage() + "); give --config with the store's varve.retention", e);
        }
    }
}
