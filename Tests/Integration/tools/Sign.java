// Signs with token keys through Java's SunPKCS11 provider and checks each signature in
// software, in one JVM (Java 11+ runs this single file without javac):
//
//   java Sign.java CONFIG PIN DATA OUTDIR ALIAS...
//
// CONFIG is a SunPKCS11 configuration naming the module. For each ALIAS it reads the
// private key and certificate from the PKCS11 keystore, signs DATA on the token
// (SHA256withRSA or SHA256withECDSA, by key type), verifies the signature with the
// certificate's public key using the JDK's software providers (never the token), and
// writes OUTDIR/ALIAS.sig and OUTDIR/ALIAS.der so that openssl can check them again.
// Prints one line per alias ("signed ALIAS ALGORITHM ... verified in software") and the
// keystore's aliases first; exits 1 on the first failure, with the exception's message.

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.Provider;
import java.security.Security;
import java.security.Signature;
import java.security.cert.X509Certificate;
import java.util.Collections;
import java.util.TreeSet;

public class Sign {
    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: java Sign.java CONFIG PIN DATA OUTDIR ALIAS...");
            System.exit(2);
        }
        Provider token = Security.getProvider("SunPKCS11").configure(args[0]);
        Security.addProvider(token);
        byte[] data = Files.readAllBytes(Path.of(args[2]));
        Path out = Path.of(args[3]);

        KeyStore keystore = KeyStore.getInstance("PKCS11", token);
        keystore.load(null, args[1].toCharArray());
        System.out.println("aliases: " + new TreeSet<>(Collections.list(keystore.aliases())));

        for (int i = 4; i < args.length; i++) {
            String alias = args[i];
            try {
                PrivateKey key = (PrivateKey) keystore.getKey(alias, null);
                X509Certificate certificate = (X509Certificate) keystore.getCertificate(alias);
                if (key == null || certificate == null) {
                    throw new IllegalStateException("no key entry for alias " + alias);
                }
                String algorithm = key.getAlgorithm().equals("RSA") ? "SHA256withRSA" : "SHA256withECDSA";
                Signature signer = Signature.getInstance(algorithm, token);
                signer.initSign(key);
                signer.update(data);
                byte[] signature = signer.sign();

                // Verified by the JDK's own software implementation, not the token's.
                String software = algorithm.endsWith("RSA") ? "SunRsaSign" : "SunEC";
                Signature verifier = Signature.getInstance(algorithm, software);
                verifier.initVerify(certificate.getPublicKey());
                verifier.update(data);
                boolean verified = verifier.verify(signature);
                Files.write(out.resolve(alias + ".sig"), signature);
                Files.write(out.resolve(alias + ".der"), certificate.getEncoded());
                System.out.println("signed " + alias + " " + algorithm + " with " + signer.getProvider().getName()
                        + ", " + signature.length + " bytes, " + (verified ? "verified" : "NOT verified")
                        + " in software by " + verifier.getProvider().getName());
                if (!verified) {
                    System.exit(1);
                }
            } catch (Exception e) {
                System.out.println("failed " + alias + ": " + e);
                System.exit(1);
            }
        }
    }
}
