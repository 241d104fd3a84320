// The OkHttp column of the client matrix: OkHttp 3.13 (Debian's libokhttp-java) as an Android app builds it, on the
// JDK's JSSE here instead of Android's Conscrypt: the default ConnectionSpecs (MODERN_TLS: TLS 1.2 and 1.3, OkHttp's
// approved suites), OkHostnameVerifier, and a trust manager holding only the built-in CA. Given PINS, a
// CertificatePinner with them (the published `pinned` key and the backup), and given ROOTS, those trusted too
// (pin-mitm's interception root, which the device is assumed to trust): there the pin, not the trust, must decide.
//
// Usage: java -cp okhttp.jar:okio.jar:CLASSES OkHttpMatrixClient CA.pem HOST PORT [PINS [ROOTS]]
//   PINS: sha256/PIN,sha256/PIN for HOST; ROOTS: more trusted roots, PEM files separated by commas.
// Loads https://HOST:PORT/ once, prints one line (the status, or OkHttp's exception and its causes) and exits 0 when it
// read an HTTP 200, 1 when it did not. A DNS name is connected at 127.0.0.1; SNI and the name check keep the name.
// One connection: no retries.
import java.io.*;
import java.net.InetAddress;
import java.nio.file.*;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.*;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.*;
import okhttp3.*;

public class OkHttpMatrixClient {
    public static void main(String[] args) throws Exception {
        if (args.length < 3 || args.length > 5) {
            System.err.println("usage: OkHttpMatrixClient CA.pem HOST PORT [PINS [ROOTS]]");
            System.exit(64);
        }
        List<String> roots = new ArrayList<>(List.of(args[0]));
        if (args.length == 5) roots.addAll(Arrays.asList(args[4].split(",")));
        String host = args[1];
        boolean accepted = false;
        String detail;
        try {
            detail = fetch(client(roots, host, args.length >= 4 ? args[3].split(",") : null), host,
                           Integer.parseInt(args[2]));
            accepted = detail.startsWith("HTTP 200");
        } catch (Exception e) {
            detail = describe(e);
        }
        System.out.println(detail);
        System.out.flush();
        System.exit(accepted ? 0 : 1);
    }

    // isAddress and describe repeat MatrixClient's on purpose: OkHttpPinningTests runs this file alone through the
    // JDK's single-file launcher (`java OkHttpMatrixClient.java`), which compiles no other source.
    static boolean isAddress(String host) {
        return host.contains(":") || host.matches("[0-9.]+");
    }

    static OkHttpClient client(List<String> roots, String host, String[] pins) throws Exception {
        X509TrustManager trust = trustManager(roots);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, new TrustManager[] {trust}, null);
        OkHttpClient.Builder builder = new OkHttpClient.Builder()
                .sslSocketFactory(context.getSocketFactory(), trust)
                .dns(name -> isAddress(name) ? Arrays.asList(InetAddress.getAllByName(name))
                                             : List.of(InetAddress.getByName("127.0.0.1")))
                .retryOnConnectionFailure(false)
                .connectTimeout(10, TimeUnit.SECONDS)
                .readTimeout(15, TimeUnit.SECONDS);
        if (pins != null) {
            CertificatePinner.Builder pinner = new CertificatePinner.Builder();
            for (String pin : pins) pinner.add(host, pin);
            builder.certificatePinner(pinner.build());
        }
        return builder.build();
    }

    static X509TrustManager trustManager(List<String> files) throws Exception {
        KeyStore roots = KeyStore.getInstance(KeyStore.getDefaultType());
        roots.load(null, null);
        int index = 0;
        for (String file : files) {
            try (InputStream in = Files.newInputStream(Path.of(file))) {
                for (Certificate certificate : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                    roots.setCertificateEntry("ca" + index++, certificate);
                }
            }
        }
        TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        factory.init(roots);
        for (TrustManager manager : factory.getTrustManagers()) {
            if (manager instanceof X509TrustManager) return (X509TrustManager) manager;
        }
        throw new IllegalStateException("no X509TrustManager");
    }

    static String fetch(OkHttpClient client, String host, int port) throws IOException {
        String authority = host.contains(":") ? "[" + host + "]" : host;
        Request request = new Request.Builder().url("https://" + authority + ":" + port + "/")
                .header("Connection", "close").build();
        try (Response response = client.newCall(request).execute()) {
            String body = response.body() == null ? "" : response.body().string();
            Handshake handshake = response.handshake();
            return "HTTP " + response.code() + (handshake == null ? "" : ", " + handshake.tlsVersion().javaName())
                    + (body.isEmpty() ? ", empty body" : "");
        } finally {
            client.dispatcher().executorService().shutdown();
            client.connectionPool().evictAll();
        }
    }

    /** The exception and its causes, one line: the innermost message says what was refused. */
    static String describe(Throwable e) {
        StringBuilder text = new StringBuilder(e.toString());
        for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
            if (!text.toString().contains(String.valueOf(cause.getMessage()))) text.append(" <- ").append(cause);
        }
        return text.toString().replaceAll("\\s+", " ");
    }
}
