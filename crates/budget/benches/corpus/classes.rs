//! The corpus's generated classes: content whose tokens o200k counts very differently from
//! prose (base64, hex, UUIDs, emoji ZWJ sequences, random common CJK, random Hangul, CJK
//! Extension B, minified JSON with hashes, digits, white-space runs, Arabic, Thai, Devanagari,
//! combining marks). Each is made from a fixed seed, so every run measures the same text.
//! Shared by the `estimate` bench and the exact-counter test.

/// A xorshift generator: the same text on every machine.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// About this many characters of each class.
const LENGTH: usize = 12_000;

/// The GB2312 level-1 hanzi: the 3,755 most common Chinese characters.
const COMMON_HANZI: &str = include_str!("common-hanzi.txt");

const ARABIC_WORDS: &[&str] = &[
    "في",
    "من",
    "على",
    "إلى",
    "أن",
    "هذا",
    "التي",
    "الذي",
    "كان",
    "مع",
    "عن",
    "بين",
    "كل",
    "بعد",
    "قبل",
    "عند",
    "لقد",
    "هناك",
    "الخادم",
    "الأداة",
    "النتيجة",
    "الملف",
    "البيانات",
    "الصورة",
    "النموذج",
    "الطلب",
    "الحد",
    "الرسالة",
    "المستخدم",
    "النظام",
    "يعمل",
    "يرسل",
    "يقرأ",
    "يكتب",
    "كبير",
    "صغير",
    "جديد",
    "الوقت",
    "اليوم",
    "العالم",
    "المدينة",
    "الكتاب",
];

const THAI_WORDS: &[&str] = &[
    "การ",
    "ที่",
    "และ",
    "ใน",
    "ของ",
    "เป็น",
    "มี",
    "ได้",
    "ไม่",
    "จะ",
    "ให้",
    "กับ",
    "ว่า",
    "นี้",
    "แล้ว",
    "เซิร์ฟเวอร์",
    "เครื่องมือ",
    "ผลลัพธ์",
    "ไฟล์",
    "ข้อมูล",
    "รูปภาพ",
    "โมเดล",
    "คำขอ",
    "ข้อความ",
    "ผู้ใช้",
    "ระบบ",
    "ทำงาน",
    "ส่ง",
    "อ่าน",
    "เขียน",
    "ใหญ่",
    "เล็ก",
    "ใหม่",
    "เวลา",
    "วันนี้",
    "โลก",
    "เมือง",
    "หนังสือ",
    "ภาษา",
    "ประเทศ",
];

const DEVANAGARI_WORDS: &[&str] = &[
    "का",
    "की",
    "के",
    "में",
    "है",
    "और",
    "से",
    "को",
    "पर",
    "यह",
    "था",
    "एक",
    "लिए",
    "भी",
    "सर्वर",
    "उपकरण",
    "परिणाम",
    "फ़ाइल",
    "डेटा",
    "चित्र",
    "मॉडल",
    "अनुरोध",
    "सीमा",
    "संदेश",
    "उपयोगकर्ता",
    "प्रणाली",
    "काम",
    "भेजता",
    "पढ़ता",
    "लिखता",
    "बड़ा",
    "छोटा",
    "नया",
    "समय",
    "आज",
    "दुनिया",
    "शहर",
    "किताब",
    "भाषा",
    "देश",
];

/// Emoji ZWJ sequences, skin tones and flags among them.
const ZWJ: &[&str] = &[
    "👨\u{200D}👩\u{200D}👧\u{200D}👦",
    "👩\u{200D}💻",
    "🧑\u{1F3FD}\u{200D}🚀",
    "🏳\u{FE0F}\u{200D}🌈",
    "👩\u{200D}❤\u{FE0F}\u{200D}💋\u{200D}👨",
    "🐻\u{200D}❄\u{FE0F}",
    "👨\u{1F3FF}\u{200D}🦰",
    "🧑\u{200D}🤝\u{200D}🧑",
    "🏴\u{200D}☠\u{FE0F}",
    "👁\u{FE0F}\u{200D}🗨\u{FE0F}",
    "🙋\u{1F3FB}\u{200D}♀\u{FE0F}",
    "🇯🇵",
];

fn words(seed: &mut Seeded, list: &[&str], separator: &str, punctuation: &str) -> String {
    let mut out = String::new();
    while out.chars().count() < LENGTH {
        out.push_str(seed.pick(list));
        if seed.below(9) == 0 {
            out.push_str(punctuation);
            out.push(if seed.below(4) == 0 { '\n' } else { ' ' });
        } else {
            out.push_str(separator);
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn uuid(seed: &mut Seeded) -> String {
    let h = hex(&seed.bytes(16));
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// Every generated class, by name, in the order the bench prints them.
pub(crate) fn classes() -> Vec<(&'static str, String)> {
    use base64::Engine as _;
    let mut seed = Seeded(0x5DEE_CE66_D1CE_4E5B);
    let s = &mut seed;
    let mut out = Vec::new();

    let b64 = base64::engine::general_purpose::STANDARD.encode(s.bytes(LENGTH * 3 / 4));
    out.push(("base64", b64));

    let mut text = String::new();
    while text.len() < LENGTH {
        text.push_str(&hex(&s.bytes(32)));
        text.push('\n');
    }
    out.push(("hex", text));

    let mut text = String::new();
    while text.len() < LENGTH {
        text.push_str(&uuid(s));
        text.push_str(if s.below(2) == 0 { "\n" } else { ", " });
    }
    out.push(("uuids", text));

    let mut text = String::new();
    while text.chars().count() < LENGTH / 2 {
        text.push_str(s.pick(ZWJ));
        if s.below(3) == 0 {
            text.push(' ');
        }
    }
    out.push(("emoji zwj", text));

    let hanzi: Vec<char> = COMMON_HANZI.chars().collect();
    let text: String = (0..LENGTH / 2).map(|_| s.pick(&hanzi)).collect();
    out.push(("random common cjk", text));

    let text: String = (0..LENGTH / 2)
        .map(|_| char::from_u32(0xAC00 + s.below(11_172) as u32).unwrap_or(' '))
        .collect();
    out.push(("random hangul", text));

    let text: String = (0..LENGTH / 4)
        .map(|_| char::from_u32(0x20000 + s.below(0xA6E0) as u32).unwrap_or(' '))
        .collect();
    out.push(("cjk extension b", text));

    let mut text = String::from("[");
    while text.len() < LENGTH {
        let digest = hex(&s.bytes(32));
        let etag = hex(&s.bytes(8));
        text.push_str(&format!(
            r#"{{"id":"{}","name":"blob_{}.bin","size":{},"sha256":"{digest}","etag":"\"{etag}\"","ok":true}},"#,
            uuid(s),
            s.below(100_000),
            s.next() % 10_000_000_000
        ));
    }
    text.pop();
    text.push(']');
    out.push(("minified json with hashes", text));

    let mut text = String::new();
    while text.len() < LENGTH {
        let digits = 1 + s.below(40);
        for _ in 0..digits {
            text.push(char::from(b'0' + s.below(10) as u8));
        }
        text.push_str(s.pick(&[" ", ",", "\n", ".", ", "]));
    }
    out.push(("digits", text));

    let mut text = String::new();
    while text.len() < LENGTH {
        let run = 1 + s.below(48);
        let blank = s.pick(&[' ', ' ', ' ', '\t', '\n']);
        for _ in 0..run {
            text.push(blank);
        }
        text.push_str(s.pick(&["x", "value", "}", "fn", "end", "42", "-", "|"]));
    }
    out.push(("whitespace runs", text));

    out.push(("arabic", words(s, ARABIC_WORDS, " ", "،")));
    out.push(("thai", words(s, THAI_WORDS, "", "")));
    out.push(("devanagari", words(s, DEVANAGARI_WORDS, " ", "।")));

    let mut text = String::new();
    while text.chars().count() < LENGTH {
        text.push(char::from(b'a' + s.below(26) as u8));
        for _ in 0..s.below(4) {
            text.push(char::from_u32(0x300 + s.below(0x70) as u32).unwrap_or(' '));
        }
        if s.below(6) == 0 {
            text.push(' ');
        }
    }
    out.push(("combining marks", text));
    out
}
