package dev.varve.server;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Varve;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

/**
 * {@code serve DIR [--port N] [--bind ADDRESS] [--config FILE] [--allow-writes] [--allow-remote]}: opens the store
 * and serves it (shipping, metrics, API, dashboard) until the process is stopped; the store is closed cleanly on
 * SIGTERM or Ctrl-C.
 */
final class ServeCommand {
    static final String USAGE = "serve DIR [--port N (default 7070)] [--bind ADDRESS (default 127.0.0.1)] [--config FILE] [--allow-writes] [--allow-remote]";

    private ServeCommand() {
    }

    static int run(String[] args, PrintStream out) throws InterruptedException {
        CommandArgs a = new CommandArgs(args, 1, Set.of("--port", "--bind", "--config"), Set.of("--allow-writes", "--allow-remote"));
        if (a.positional().size() != 1) throw new IllegalArgumentException("serve takes one store directory");
        Path dir = Path.of(a.positional().get(0));
        long port = a.get("--port") == null ? 7070 : CommandArgs.parseLong("--port", a.get("--port"));
        if (port < 0 || port > 65535) throw new IllegalArgumentException("--port must be 0..65535, was " + port);
        String bind = a.get("--bind") == null ? "127.0.0.1" : a.get("--bind");
        VarveConfig config = a.get("--config") == null ? VarveConfig.builder().path(dir).build()
                : VarveConfig.load(Path.of(a.get("--config"))).toBuilder().path(dir).build();
        ServerOptions options = new ServerOptions().allowWrites(a.flag("--allow-writes")).allowNonLoopback(a.flag("--allow-remote"));
        Varve store = Varve.open(config);
        VarveServer server;
        try {
            server = VarveServer.start(store, new InetSocketAddress(bind, (int) port), options);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close();
            store.close();
            stopped.countDown();
        }, "varve-serve-shutdown"));
        InetSocketAddress at = server.address();
        out.println("serving " + dir + " on " + at.getHostString() + ":" + at.getPort() + (options.allowWrites() ? " (writes allowed)" : " (read-only)"));
        out.flush();
        stopped.await();
        return 0;
    }
}
