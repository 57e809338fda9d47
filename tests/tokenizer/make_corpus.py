#!/usr/bin/env python3
"""Writes tests/tokenizer/corpus.json: the lines every golden tokenizer test encodes.

    python3 tests/tokenizer/make_corpus.py            # rewrites corpus.json beside this file
    python3 tests/tokenizer/make_corpus.py --check    # exits 1 if corpus.json is out of date

Plain Python 3, no packages. The output is deterministic (no randomness, no clock).
Contents: natural sentences for each of the 38 languages of the model doc table (section
5.5), the same sentences in the shapes hymt feeds the tokenizer (translation prompts,
paragraphs, surrounding spaces), then edge cases: whitespace, digits, contractions, emoji,
combining marks and NFC, zero-width characters, full-width forms, long words, URLs, code,
and the texts of special tokens of every tokenizer tested (whole and partial).

The JSON file has one string per line. Characters that are invisible or ambiguous on screen
(controls, format characters, spaces other than U+0020, line/paragraph separators, private
use, unassigned) are written as \\uXXXX escapes; the rest is raw UTF-8. No line holds
U+0000 (jansson, which hymt uses, rejects it).
"""
import json
import os
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus.json")

# ---------------------------------------------------------------------------------------
# Languages: (code, English name, Chinese name, sentences). Order of the model doc table.
# ---------------------------------------------------------------------------------------
LANGS = [
    ("zh", "Chinese", "中文", [
        "今天天气很好，我们一起去公园散步吧。",
        "机器翻译让说不同语言的人可以更方便地交流。",
        "他说：“这件事明天再讨论。”然后就离开了会议室。",
    ]),
    ("en", "English", "英语", [
        "The quick brown fox jumps over the lazy dog.",
        "Machine translation helps people who speak different languages understand each other.",
        "Get something off your chest",
    ]),
    ("fr", "French", "法语", [
        "Je voudrais réserver une table pour deux personnes ce soir, s'il vous plaît.",
        "L'été dernier, nous sommes allés à la mer près de Nice ; c'était magnifique !",
    ]),
    ("pt", "Portuguese", "葡萄牙语", [
        "Não sei se ele já chegou à estação, mas vou ligar para ele.",
        "A educação é a arma mais poderosa que você pode usar para mudar o mundo.",
    ]),
    ("es", "Spanish", "西班牙语", [
        "¿Dónde está la biblioteca? Necesito devolver estos libros mañana.",
        "¡Qué alegría verte! El niño comió una manzana y después salió a jugar al jardín.",
    ]),
    ("ja", "Japanese", "日语", [
        "今日はとても暑いので、冷たいお茶を飲みたいです。",
        "東京駅から新幹線で京都まで行きました。時々、人々はコーヒーを飲みます。",
        "ｶﾀｶﾅの半角とカタカナの全角、そしてㇰㇱㇲのような小さい文字もあります。",
    ]),
    ("tr", "Turkish", "土耳其语", [
        "Yarın sabah erkenden İstanbul'a gideceğim.",
        "Çocuklar bahçede oyun oynuyor ve kuşlar şarkı söylüyor; ılık bir öğleden sonra.",
    ]),
    ("ru", "Russian", "俄语", [
        "Москва — столица России, и в ней живёт более двенадцати миллионов человек.",
        "Я люблю читать книги по вечерам, особенно Толстого и Чехова.",
    ]),
    ("ar", "Arabic", "阿拉伯语", [
        "مرحباً، كيف حالك اليوم؟",
        "الترجمة الآلية تساعد الناس على فهم اللغات المختلفة.",
        "اللُّغَةُ العَرَبِيَّةُ جَمِيلَةٌ جِدًّا، وَعُمْرُهَا أَكْثَرُ مِنْ ١٥٠٠ سَنَة.",
    ]),
    ("ko", "Korean", "韩语", [
        "안녕하세요, 만나서 반갑습니다.",
        "저는 내일 서울에서 부산까지 기차를 타고 갈 거예요.",
    ]),
    ("th", "Thai", "泰语", [
        "สวัสดีครับ วันนี้อากาศดีมาก",
        "ฉันชอบกินอาหารไทยโดยเฉพาะต้มยำกุ้งและส้มตำ",
    ]),
    ("it", "Italian", "意大利语", [
        "Vorrei un caffè e un cornetto, per favore.",
        "Perché non andiamo al cinema stasera? È già tardi, però.",
    ]),
    ("de", "German", "德语", [
        "Über den Wolken muss die Freiheit wohl grenzenlos sein.",
        "Die Straße ist nass, weil es gestern den ganzen Tag geregnet hat. GROẞE Größe!",
    ]),
    ("vi", "Vietnamese", "越南语", [
        "Tôi muốn học tiếng Việt để nói chuyện với bạn bè.",
        "Hôm nay trời đẹp quá, chúng ta đi dạo ở hồ Hoàn Kiếm nhé!",
    ]),
    ("ms", "Malay", "马来语", [
        "Saya suka makan nasi lemak pada waktu pagi.",
        "Terima kasih atas bantuan anda semalam.",
    ]),
    ("id", "Indonesian", "印尼语", [
        "Saya sedang belajar bahasa Indonesia di Jakarta.",
        "Apakah kamu sudah makan siang? Ayo kita pergi ke warung.",
    ]),
    ("tl", "Filipino", "菲律宾语", [
        "Magandang umaga po! Kumusta ka na?",
        "Mahal ko ang aking pamilya at ang aking bayan.",
    ]),
    ("hi", "Hindi", "印地语", [
        "मैं हिंदी सीख रहा हूँ।",
        "भारत एक विशाल और विविधतापूर्ण देश है, जिसकी जनसंख्या १४० करोड़ से अधिक है।",
    ]),
    ("zh-Hant", "Traditional Chinese", "繁体中文", [
        "我們明天一起去台北看電影，好嗎？",
        "這本書的內容非常豐富，值得一讀。",
    ]),
    ("pl", "Polish", "波兰语", [
        "Zażółć gęślą jaźń.",
        "Wczoraj byłem w Krakowie i zwiedziłem Wawel.",
    ]),
    ("cs", "Czech", "捷克语", [
        "Příliš žluťoučký kůň úpěl ďábelské ódy.",
        "Zítra pojedu vlakem do Brna a v neděli se vrátím.",
    ]),
    ("nl", "Dutch", "荷兰语", [
        "Ik woon al tien jaar in Amsterdam en ik fiets elke dag naar mijn werk.",
        "Het is vandaag koud en winderig, dus neem een jas mee.",
    ]),
    ("km", "Khmer", "高棉语", [
        "សួស្តី! តើអ្នកសុខសប្បាយទេ?",
        "ខ្ញុំចូលចិត្តរៀនភាសាខ្មែរ។",
    ]),
    ("my", "Burmese", "缅甸语", [
        "မင်္ဂလာပါ။ နေကောင်းလား။",
        "ကျွန်တော် မြန်မာစာ လေ့လာနေပါတယ်။",
    ]),
    ("fa", "Persian", "波斯语", [
        "سلام، حال شما چطور است؟",
        "من هر روز صبح چای می\u200cنوشم و ساعت ۸ به سر کار می\u200cروم.",
    ]),
    ("gu", "Gujarati", "古吉拉特语", [
        "નમસ્તે, તમે કેમ છો?",
        "હું ગુજરાતી ભાષા શીખી રહ્યો છું.",
    ]),
    ("ur", "Urdu", "乌尔都语", [
        "آپ کیسے ہیں؟",
        "میں اردو زبان سیکھ رہا ہوں۔",
    ]),
    ("te", "Telugu", "泰卢固语", [
        "నమస్కారం, మీరు ఎలా ఉన్నారు?",
        "నేను తెలుగు నేర్చుకుంటున్నాను.",
    ]),
    ("mr", "Marathi", "马拉地语", [
        "नमस्कार, तुम्ही कसे आहात?",
        "मी मराठी भाषा शिकत आहे आणि मला पुणे खूप आवडते.",
    ]),
    ("he", "Hebrew", "希伯来语", [
        "שלום, מה שלומך?",
        "אני לומד עברית באוניברסיטה בירושלים. שָׁלוֹם עֲלֵיכֶם!",
    ]),
    ("bn", "Bengali", "孟加拉语", [
        "নমস্কার, আপনি কেমন আছেন?",
        "আমি বাংলা ভাষায় কথা বলতে ভালোবাসি।",
    ]),
    ("ta", "Tamil", "泰米尔语", [
        "வணக்கம், நீங்கள் எப்படி இருக்கிறீர்கள்?",
        "நான் தமிழ் கற்றுக்கொண்டிருக்கிறேன்.",
    ]),
    ("uk", "Ukrainian", "乌克兰语", [
        "Добрий день! Як справи?",
        "Я вивчаю українську мову в Києві; її ґанок і подвір'я гарні.",
    ]),
    ("bo", "Tibetan", "藏语", [
        "བཀྲ་ཤིས་བདེ་ལེགས།",
        "ང་བོད་སྐད་སློབ་སྦྱོང་བྱེད་ཀྱི་ཡོད། ཁྱེད་རང་སྐུ་གཟུགས་བདེ་པོ་ཡིན་པས།",
    ]),
    ("kk", "Kazakh", "哈萨克语", [
        "Сәлеметсіз бе! Қалыңыз қалай?",
        "Мен қазақ тілін үйреніп жүрмін. Qazaq tili — memlekettik til.",
    ]),
    ("mn", "Mongolian", "蒙古语", [
        "Сайн байна уу? Таны нэр хэн бэ?",
        "Би монгол хэл сурч байна.",
        # traditional script (U+1800 block), with the Mongolian vowel separator U+180E and
        # the narrow no-break space U+202F that the script uses before suffixes
        "ᠮᠣᠩᠭᠣᠯ ᠪᠢᠴᠢᠭ᠌ ᠰᠠᠶᠢᠨ ᠪᠠᠶᠢᠨ\u180eᠠ ᠤᠤ᠃ ᠮᠣᠩᠭᠣᠯ\u202fᠤᠨ ᠬᠡᠯᠡ",
    ]),
    ("ug", "Uyghur", "维吾尔语", [
        "ياخشىمۇسىز؟",
        "مەن ئۇيغۇر تىلىنى ئۆگىنىۋاتىمەن.",
    ]),
    ("yue", "Cantonese", "粤语", [
        "你食咗飯未呀？",
        "我哋今晚去邊度食嘢好呢？佢話唔得閒喎，𠵱家冇乜嘢做嘅。",
    ]),
]

PROMPT_7B_ZH = "把下面的文本翻译成{t}，不要额外解释。\n\n{s}"
PROMPT_XX = "Translate the following segment into {t}, without additional explanation.\n\n{s}"
PROMPT_15_ZH = "将以下文本翻译为{t}，注意只需要输出翻译后的结果，不要额外解释：\n\n{s}"


def language_lines():
    out = []
    for i, (code, en, zh, sents) in enumerate(LANGS):
        out.extend(sents)
        # a two-sentence paragraph, and the first sentence padded with spaces and a newline
        out.append(sents[0] + " " + sents[1] + "\n\n" + sents[-1])
        out.append("  " + sents[0] + "  \n")
        # the translation prompts hymt builds (target: the next language of the table)
        t_code, t_en, t_zh, _ = LANGS[(i + 1) % len(LANGS)]
        chinese_side = code in ("zh", "zh-Hant", "yue") or t_code in ("zh", "zh-Hant", "yue")
        if chinese_side:
            out.append(PROMPT_7B_ZH.format(t=t_zh, s=sents[1]))
            out.append(PROMPT_15_ZH.format(t=t_zh, s=sents[0]))
        else:
            out.append(PROMPT_XX.format(t=t_en, s=sents[1]))
    out.append(" ".join(s[3][0] for s in LANGS))  # one line in every script
    return out


# ---------------------------------------------------------------------------------------
# Edge cases
# ---------------------------------------------------------------------------------------
WHITESPACE = [
    "",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\n\n\n",
    "\r\n\r\n",
    " \n \n ",
    "a b",
    "a  b",
    "a   b   ",
    "a \tb\t c",
    "  leading spaces",
    "trailing spaces  ",
    "  both sides  ",
    "\t\tindented with tabs",
    "tab\there\tand\tthere",
    "line one\nline two\nline three",
    "windows line\r\nnext line\r\n",
    "old mac\rline\rbreaks",
    "mixed \r\n\n\r \n endings",
    "word \n\tword",
    "x \r\n  y",
    "end with spaces   \n   ",
    "spaces before newline    \nafter",
    "\n\nstarts with blank lines",
    "ends with blank lines\n\n",
    "\u00a0no-break\u00a0spaces\u00a0",
    "\u3000ideographic\u3000space\u3000",
    "thin\u2009space and hair\u200aspace and figure\u2007space",
    "narrow\u202fno-break space",
    "line\u2028separator and paragraph\u2029separator",
    "next\u0085line",
    "vertical\u000btab and form\u000cfeed",
    "\u1680ogham space mark",
    "a" + " " * 64 + "b",
    " " * 300,
    "\n" * 40,
    "\t \t \t\n\t \t",
    "中文 空格　全角空格\t制表符\n换行",
]

DIGITS = [
    "0",
    "7",
    "42",
    "1234567890",
    "12345678901234567890123456789012345678901234567890",
    "3.14159265358979323846",
    "1,234,567.89",
    "-0.5e-10 +6.02e23 1e100",
    "0x1F 0xdeadBEEF 0b1010 0o17",
    "2024-01-15T10:30:00Z",
    "+86 138-0013-8000, (555) 123-4567",
    "99.9% of $1,000,000 is €999.000; ¥1000 = £5.5",
    "5km/h, 30°C, 1/2, A4, COVID-19, MP3, i18n, H2O, 3rd, 21st",
    "Version 2.0.1-rc3 released on 2023/12/31",
    "Arabic-Indic ٠١٢٣٤٥٦٧٨٩ and Persian ۰۱۲۳۴۵۶۷۸۹",
    "Devanagari १२३४५६७८९० Bengali ১২৩৪৫ Gujarati ૧૨૩ Telugu ౧౨౩ Tamil ௧௨௩",
    "Thai ๑๒๓ Khmer ១២៣ Burmese ၁၂၃ Tibetan ༡༢༣ Mongolian ᠑᠒᠓",
    "Full-width １２３４５ and ０",
    "Superscripts x²+y³=z¹ fractions ½ ¾ ⅓ Roman Ⅻ ⅷ circled ①⑳",
    "〇一二三四五六七八九十百千万亿",
    "第1章第23节第456页",
    "１２３abc４５６",
    "a1b22c333d4444e55555",
]

CONTRACTIONS = [
    "it's IT'S It'S iT's",
    "don't DON'T Don'T",
    "we're WE'RE We'Re wE'rE",
    "I've I'VE i'Ve",
    "I'm I'M i'M",
    "we'll WE'LL We'Ll wE'lL",
    "he'd HE'D He'D",
    "'s 'S 't 'T 're 'RE 've 'VE 'm 'M 'll 'LL 'd 'D",
    "'s",
    "'LL",
    "''s ''S '''re",
    "'ss 'sss 'llama 'LLAMA 'dog 'MOUSE 'verb",
    "rock 'n' roll, y'all, o'clock, ma'am, 'tis",
    "The cat's toy and the CATS' toys; James's book",
    "curly quotes: it’s we’re I’ve ‘quoted’",
    "long s: it'ſ IT'ſ and Kelvin 'K",
    "x's,y'S;z'LL.",
]

EMOJI = [
    "I love it ❤️👍🏽",
    "👨‍👩‍👧‍👦 family, 👩‍❤️‍💋‍👨 kiss, 🧑🏿‍💻 coder",
    "🏳️‍🌈 🏴‍☠️ 🏴󠁧󠁢󠁳󠁣󠁴󠁿",
    "🇨🇳🇺🇸🇯🇵🇩🇪🇫🇷",
    "1️⃣2️⃣#️⃣*️⃣",
    "😀😃😄😁😆😅🤣😂",
    "👋🏻👋🏼👋🏽👋🏾👋🏿",
    "text🙂text 🙂 text",
    "☺ ☺️ ♥ ♥️ ✔ ✔️",
    "emoji at the end 🎉",
]

NFC = [
    "Cafe\u0301 au lait",                     # é decomposed
    "e\u0301 \u00e9 e\u0301\u0301",
    "A\u030a \u00c5 \u212b",                  # Å three ways (ANGSTROM SIGN is a singleton)
    "\u2126 \u03a9 \u212a K",                 # OHM SIGN, KELVIN SIGN: NFC maps them away
    "n\u0303 and N\u0303 in Espan\u0303a",
    "q\u0307\u0323 q\u0323\u0307",            # canonical reordering of marks
    "Vie\u0323\u0302t Nam",                   # Việt with marks in non-canonical order
    "Vi\u1ec7t Nam",
    "\u1112\u1161\u11ab\u1100\u1173\u11af",   # 한글 as conjoining jamo
    "\u0958 \u0915\u093c",                    # DEVANAGARI QA: a composition exclusion
    "\uf900\uf901 compatibility ideographs",
    "\u0041\u0308\u0304 \u01de",              # Ǟ
    "\ufb01 \ufb02 ligatures stay under NFC",
    "\u0301 leading combining mark",
    "x\u0300\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308\u0309",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f alg\u0336o",
    "\u0627\u064e\u0644\u0652 \u05e9\u05c1\u05b8",  # Arabic and Hebrew marks, decomposed order
]

ZERO_WIDTH = [
    "zero\u200bwidth\u200bspace",
    "joiner a\u200db and non-joiner a\u200cb",
    "\ufeffBOM at the start",
    "BOM\ufeffin the middle",
    "soft\u00adhyphen",
    "\u200edirection\u200f marks\u202a embedded\u202c",
    "word\u2060joiner",
    "\u202eright-to-left override\u202c",
    "\u200b",
    "\u200b\u200c\u200d\ufeff",
    "invisible\u2062times and\u2063separator",
    "\u034fcombining grapheme joiner",
]

FULLWIDTH = [
    "ＡＢＣ　ａｂｃ　１２３！？（）",
    "Ｈｅｌｌｏ，ｗｏｒｌｄ．",
    "ﾊﾝｶｸｶﾀｶﾅ ｶﾞｷﾞｸﾞ",
    "＜｜ｆｕｌｌ｜＞ and ＂quotes＂",
    "【注意】「括弧」『二重』〈山〉《書名》",
    "中文标点：，。！？；：“”‘’（）——……",
]

URLS = [
    "https://example.com/path/to/page?query=1&lang=zh-CN#section",
    "http://user:pass@host.example:8080/a%20b/c?x=%E4%B8%AD",
    "Visit www.example.org or mail someone@example.org today.",
    "ftp://files.example.net/pub/file-1.2.3.tar.gz",
    "https://zh.wikipedia.org/wiki/機器翻譯",
    "C:\\Users\\name\\Documents\\file.txt and /usr/local/bin/hymt",
    "@user #hashtag $VAR ~home ^caret |pipe \\back `tick`",
]

CODE = [
    "int main(void) {\n    printf(\"hello, world\\n\");\n    return 0;\n}\n",
    "def f(x):\n\tif x > 0:\n\t\treturn x ** 2\n\treturn -x  # comment\n",
    "for (size_t i = 0; i < n; ++i) a[i] += b[i] * c[i];",
    "{\"key\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}",
    "<html><body><p class=\"x\">Hello &amp; goodbye</p></body></html>",
    "ls -la | grep '\\.py$' && echo \"done\" >> log.txt 2>&1",
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;",
    "$$\\sum_{i=1}^{n} x_i^2 \\leq \\int_0^\\infty e^{-t} dt$$",
    "| col A | col B |\n|-------|-------|\n| 1     | 2     |",
    "x=1;y=2;z=x+y;print(z)",
    "a->b, a=>b, a::b, a!=b, a===b, a<=b, a>>=2, a||b, a&&b, ...args, ?.x, ?? y",
    "    four spaces\n        eight spaces\n\ttab",
    "/* comment */ // another\n# shell comment\n-- sql comment",
    "regex: ^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$",
]

SPECIAL_TEXT = [
    # Hunyuan 7B specials (hy7b-tiny has <|extra_0|> .. <|extra_10|>)
    "<|startoftext|>",
    "<|eos|>",
    "<|endoftext|>",
    "<|bos|><|pad|>",
    "<|extra_0|>",
    "<|extra_4|><|extra_5|><|extra_10|>",
    "<|extra_11|> <|extra_204|>",
    "<|startoftext|>Translate the following segment into Chinese, without additional explanation.\n\nGet something off your chest<|extra_0|>",
    "<|startoftext|>You are a translator.<|extra_4|>Hello<|extra_0|>你好<|eos|>",
    "before<|eos|>after",
    " <|eos|> ",
    "<|eos|><|eos|>",
    "<|<|eos|>|>",
    "<|EOS|> <| eos |> <|eos |>",
    # partial ones
    "<|extr",
    "|>",
    "<|",
    "<|eos",
    "eos|>",
    "<|extra_",
    "a <|startoftext",
    # Hunyuan 1.8B specials (full-width bars U+FF5C, U+2581)
    "<｜hy_begin▁of▁sentence｜><｜hy_User｜>你好<｜hy_Assistant｜>",
    "<｜hy_User｜>",
    "<｜hy_place▁holder▁no▁2｜>",
    "system<｜hy_place▁holder▁no▁3｜><｜hy_User｜>text",
    "<｜hy_end▁of▁sentence｜><｜hy_pad｜>",
    "<｜hy_place▁holder▁no▁12｜> <｜hy_place▁holder▁no▁13｜>",
    "<｜hy_User",
    "hy_User｜>",
    "<|hy_User|>",
    "▁▁leading lower blocks▁",
    # Qwen3 and Llama-3 specials and added tokens
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "<think>\nreasoning\n</think>\n\nanswer",
    "<tool_call>{\"name\": \"f\"}</tool_call>",
    "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<|reserved_special_token_0|><|reserved_special_token_250|>",
    "<|end_of_text|> <|endoftext|>",
    "<|im_start",
    "<thin",
]

MIXED = [
    "Hello世界！こんにちは123안녕",
    "我爱NLP和AI！iPhone 15 Pro Max售价7999元。",
    "東京2020オリンピックは2021年に開催された。",
    "α-β-γ Ω≈π, ∑_{i=1}^{n} x_i² ≤ ∞, √2 ≠ 1.41",
    "Καλημέρα κόσμε! Ελληνικά.",
    "გამარჯობა, Բարեւ, ሰላም, ᏣᎳᎩ",
    "Здравствуй, world! 你好, мир!",
    "CJK ext A 㐀㐁 ext B 𠀀𠀁 beyond 9FA5: 鿦鿧 and 々〆ヶ",
    "private use \ue000\uf8ff and plane 15 \U000f0000",
    "replacement char \ufffd and noncharacter-adjacent \ufffc",
    "controls \u0001\u0002\u001f\u007f and bell\u0007",
    "C1 controls \u0080\u0081\u009f",
    "arrows →←↑↓ ⇒ math ∀∃∈∉ box ─│┌┐ blocks █▓▒░",
    "currency ₹ ₽ ₩ ₪ ₫ ₺ ₴ ₸ ฿ ៛",
    "quotes «guillemets» „Anführung“ 「かぎ」 ‹single›",
    "dashes - – — ― and ellipsis … and bullets • ·",
    "Mr. Smith's e-mail: J.R.R.Tolkien@mail.co.uk; tel. 555-0100.",
    "UPPER lower MiXeD camelCase snake_case kebab-case SCREAMING_SNAKE",
    "!!!???...,,,;;;:::",
    "(((nested [brackets {and} braces])))",
    "one.two.three-four_five/six\\seven",
    "'quoted' \"double\" `back` 'it's'",
    "ǅ ǈ ǋ titlecase digraphs, ﬀ ﬃ ligatures, ẞ ß, İ ı, Ϊ ϊ",
    "Mongolian free variation selector ᠠ᠋ᠠ᠌ᠠ᠍",
    "Khmer coeng ក្ក ក្ខ Thai ก่อน ไม้ Lao ສະບາຍດີ",
    "Devanagari nukta क़ ख़ ग़ and virama क्‍ष (with ZWJ) क्‌ष (with ZWNJ)",
    "Tibetan stacks བསྒྲུབས་ ཧཱུྂ",
    "Burmese stacked မင်္ဂလာ and kinzi",
]


def long_lines():
    return [
        "supercalifragilisticexpialidocious" * 90,
        "a" * 3000,
        "的一是不了人我在有他这为之大来以个中上们" * 100,
        "1234567890" * 300,
        " " * 2000 + "x",
        "!?" * 1000,
        "😀" * 500,
        "ab1" * 1000,
        "Zażółć" * 400,
        "ᠮᠣᠩᠭᠣᠯ" * 300,
        "ภาษาไทย" * 300,
        "https://example.com/" + "very/long/path/segment-" * 100 + "?q=" + "x" * 500,
        "QmFzZTY0IGJsb2IgZm9yIHRlc3Rpbmcgb25seS4=" * 60,
        "\n".join(f"{i:04d}\tline {i} of a long block\t{'*' * (i % 7)}" for i in range(120)),
    ]


def all_lines():
    lines = language_lines()
    for group in (WHITESPACE, DIGITS, CONTRACTIONS, EMOJI, NFC, ZERO_WIDTH, FULLWIDTH, URLS, CODE,
                  SPECIAL_TEXT, MIXED):
        lines.extend(group)
    lines.extend(long_lines())
    return lines


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------
ESCAPE_CATS = {"Cc", "Cf", "Zl", "Zp", "Zs", "Co", "Cn", "Cs"}


def dump_str(s):
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch != " " and unicodedata.category(ch) in ESCAPE_CATS:
            if o > 0xFFFF:
                o -= 0x10000
                out.append("\\u%04x\\u%04x" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF)))
            else:
                out.append("\\u%04x" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def render(lines):
    return "[\n" + ",\n".join(dump_str(s) for s in lines) + "\n]\n"


def main():
    lines = all_lines()
    for i, s in enumerate(lines):
        assert "\x00" not in s, i
        s.encode("utf-8")  # no lone surrogates
    text = render(lines)
    assert json.loads(text) == lines
    seen_langs = {c for c, _, _, _ in LANGS}
    assert len(seen_langs) == 38, len(seen_langs)
    if "--check" in sys.argv[1:]:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{OUT} is out of date: run {sys.argv[0]}", file=sys.stderr)
                sys.exit(1)
        print(f"{OUT}: up to date, {len(lines)} lines")
        return
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(f"{OUT}: {len(lines)} lines, {len(text.encode('utf-8'))} bytes")


if __name__ == "__main__":
    main()
